import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { createGenerator } from "../../src/generator/generator";
import { createLogger } from "../../src/log";
import { recordInbound } from "../../src/messages/service";
import { parseIsoInstant } from "../../src/messages/time";
import { createLocalBackend } from "../../src/workflows/backend";
import { defineWorkflow, type Workflow } from "../../src/workflows/define";
import { loadWorkflows } from "../../src/workflows/loader";
import { runWorkflow, type RunnerDeps } from "../../src/workflows/runner";
import { backoffMs, ensureWorkflow, finishRun, getState } from "../../src/workflows/store";
import { clockDialects, dialects, manualClock, storages, type TestDialect } from "./helpers";

// The lease tests wait on real time and a real database.
setDefaultTimeout(30_000);

const PHONE = "+14155550123";

/** An app on a fresh storage: on a clock the test moves (ms) where the dialect has one, unless `realTime`. */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (opts: { replies?: string[]; realTime?: boolean } = {}) => {
    const clock = manualClock(Date.now());
    const storage = await fresh(dialect.movableClock && !opts.realTime ? { clock: () => clock.t * 1000 } : {});
    const app = createApp(loadConfig({ DATABASE_URL: ":memory:" }), storage, createLogger("error"));
    if (opts.replies) {
      app.generator = createGenerator({ chatModel: new FakeListChatModel({ responses: opts.replies }), model: "fake", timeoutMs: 1000 });
    }
    const deps = (owner = "test-owner"): RunnerDeps => ({
      backend: createLocalBackend(app),
      storage,
      log: app.log,
      maxMessageLength: 10000,
      owner,
    });
    const inbound = async (message: string, phone = PHONE) => (await recordInbound(storage, "loopback", { phone, message })).record;
    const outbound = async () => (await storage.messages.history(PHONE, 100, 0)).rows.filter((r) => r.direction === "outbound");
    const runs = () => storage.workflows.recentRuns("test-flow", 100);
    return { storage, workflows: storage.workflows, clock, deps, inbound, outbound, runs };
  };
}

const workflow = (run: Workflow["run"], extra: Partial<Workflow> = {}) =>
  defineWorkflow({ name: "test-flow", schedule: "* * * * *", run, ...extra });

test("backoff doubles from 5 s and stops at 5 minutes", () => {
  expect([0, 1, 2, 3, 4].map(backoffMs)).toEqual([0, 5_000, 10_000, 20_000, 40_000]);
  expect(backoffMs(7)).toBe(300_000);
  expect(backoffMs(50)).toBe(300_000);
});

describe.each(dialects)("on $name", (dialect) => {
  const setup = setups(dialect);

  describe("backoff", () => {
    test("a failed run backs off; a successful one clears it", async () => {
      const { deps, workflows, clock } = await setup();
      let fail = true;
      const wf = workflow(() => {
        if (fail) throw new Error("boom");
      });
      await runWorkflow(deps(), wf, { trigger: "manual" });
      await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(await workflows.get("test-flow")).toMatchObject({ failures: 2, backingOff: true });
      if (dialect.movableClock) expect((await workflows.get("test-flow"))?.backoffUntil).toBe(clock.t + 10_000);
      fail = false;
      await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(await workflows.get("test-flow")).toMatchObject({ failures: 0, backoffUntil: null, backingOff: false });
    });
  });

  describe("lease", () => {
    test("one owner at a time; free again when it expires or is released", async () => {
      const { storage, workflows } = await setup({ realTime: true });
      await ensureWorkflow(storage, "w");
      expect(await workflows.acquireLease("w", "a", 1_500)).toBe(true);
      expect(await workflows.acquireLease("w", "b", 1_500)).toBe(false);
      await Bun.sleep(1_600);
      expect(await workflows.acquireLease("w", "b", 60_000)).toBe(true);
      expect(await workflows.renewLease("w", "a", 60_000)).toBe(false);
      await workflows.releaseLease("w", "a");
      expect(await workflows.acquireLease("w", "c", 60_000)).toBe(false);
      await workflows.releaseLease("w", "b");
      expect(await workflows.acquireLease("w", "c", 60_000)).toBe(true);
    });

    test("of many owners taking a free lease at once, one gets it", async () => {
      const { storage, workflows } = await setup();
      await ensureWorkflow(storage, "w");
      const won = await Promise.all(Array.from({ length: 8 }, (_, i) => workflows.acquireLease("w", `owner-${i}`, 60_000)));
      expect(won.filter(Boolean)).toHaveLength(1);
    });

    test("a run while another process holds the lease is skipped and runs nothing", async () => {
      const { deps, storage, workflows } = await setup();
      await ensureWorkflow(storage, "test-flow");
      await workflows.acquireLease("test-flow", "other-process", 60_000);
      let ran = false;
      const result = await runWorkflow(deps(), workflow(() => void (ran = true)), { trigger: "schedule" });
      expect(result.status).toBe("skipped");
      expect(ran).toBe(false);
    });
  });

  describe("run records", () => {
    test("a run left `running` by a dead process is ended by the next run that takes the lease", async () => {
      const { deps, storage, workflows, runs } = await setup();
      await ensureWorkflow(storage, "test-flow");
      await workflows.startRun({ id: "dead-run", workflow: "test-flow", trigger: "schedule", dryRun: false });
      await runWorkflow(deps(), workflow(() => {}), { trigger: "manual" });
      const rows = await runs();
      expect(rows.find((r) => r.id === "dead-run")).toMatchObject({ status: "error", error: expect.stringContaining("interrupted") });
      expect(rows.filter((r) => r.status === "running")).toHaveLength(0);
    });
  });

  describe("cursor", () => {
    test("a new workflow starts after the messages already stored", async () => {
      const { deps, inbound } = await setup();
      await inbound("old message");
      let seen: string[] = [];
      await runWorkflow(deps(), workflow(async (ctx) => void (seen = (await ctx.poll()).map((m) => m.message))), { trigger: "manual" });
      expect(seen).toEqual([]);
    });

    test("moves only when a run succeeds: a failed run sees the same messages again", async () => {
      const { deps, storage, workflows, inbound } = await setup();
      await ensureWorkflow(storage, "test-flow");
      const m1 = await inbound("first");
      const seen: string[][] = [];
      let fail = true;
      const wf = workflow(async (ctx) => {
        seen.push((await ctx.poll()).map((m) => m.id));
        if (fail) throw new Error("boom");
      });
      expect((await runWorkflow(deps(), wf, { trigger: "manual" })).status).toBe("error");
      fail = false;
      expect((await runWorkflow(deps(), wf, { trigger: "manual" })).handled).toBe(1);
      await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(seen).toEqual([[m1.id], [m1.id], []]);
      expect((await workflows.get("test-flow"))?.cursor).toBe(parseIsoInstant(m1.timestamp)!);
    });

    test("each poll in a run continues after the last; a phone-filtered poll does not move the cursor", async () => {
      const { deps, storage, workflows, inbound } = await setup();
      await ensureWorkflow(storage, "test-flow");
      const a = await inbound("a", "+14155550100");
      const b = await inbound("b", "+14155550101");
      const pages: string[][] = [];
      await runWorkflow(
        deps(),
        workflow(async (ctx) => {
          pages.push((await ctx.poll({ phone: "+14155550101" })).map((m) => m.message));
          pages.push((await ctx.poll({ limit: 1 })).map((m) => m.message));
          pages.push((await ctx.poll({ limit: 1 })).map((m) => m.message));
          pages.push((await ctx.poll()).map((m) => m.message));
        }),
        { trigger: "manual" },
      );
      expect(pages).toEqual([["b"], ["a"], ["b"], []]);
      expect((await workflows.get("test-flow"))?.cursor).toBe(parseIsoInstant(b.timestamp)!);
      expect(a.timestamp < b.timestamp).toBe(true);
    });
  });

  describe("reply", () => {
    test("sends at most once per inbound message across failed runs, whatever the new text", async () => {
      const { deps, storage, workflows, inbound, outbound } = await setup({ replies: ["first text", "second text"] });
      await ensureWorkflow(storage, "test-flow");
      await inbound("hello");
      const results: boolean[] = [];
      let fail = true;
      const wf = workflow(async (ctx) => {
        for (const msg of await ctx.poll()) {
          const { text } = await ctx.generate({ phone: msg.phone, context: [{ role: "user", content: msg.message }] });
          results.push((await ctx.reply(msg, text)).replayed);
        }
        if (fail) throw new Error("crashed after replying");
      });
      await runWorkflow(deps(), wf, { trigger: "manual" });
      fail = false;
      await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(results).toEqual([false, true]);
      expect((await outbound()).map((m) => m.body)).toEqual(["first text"]);
    });
  });

  describe("limits", () => {
    test("timeoutMs aborts the run through ctx.signal and nothing more is sent", async () => {
      const { deps, storage, workflows, outbound } = await setup();
      await ensureWorkflow(storage, "test-flow");
      let aborted = false;
      const wf = workflow(
        async (ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
          aborted = ctx.signal.aborted;
          await ctx.send({ phone: PHONE, message: "too late" });
        },
        { timeoutMs: 30 },
      );
      const result = await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(result.status).toBe("timeout");
      expect(result.error).toContain("timed out after 30 ms");
      await Bun.sleep(5);
      expect(aborted).toBe(true);
      expect(await outbound()).toHaveLength(0);
      expect((await workflows.get("test-flow"))?.failures).toBe(1);
    });

    test("ctx.generate without a generator fails the run with a clear error", async () => {
      const { deps } = await setup();
      const result = await runWorkflow(
        deps(),
        workflow(async (ctx) => void (await ctx.generate({ phone: PHONE, context: [{ role: "user", content: "hi" }] }))),
        { trigger: "manual" },
      );
      expect(result.status).toBe("error");
      expect(result.error).toContain("OPENAI_API_KEY");
    });

    test("bad arguments to ctx.send are refused with the field named", async () => {
      const { deps } = await setup();
      const result = await runWorkflow(deps(), workflow(async (ctx) => void (await ctx.send({ phone: "555", message: "x" }))), {
        trigger: "manual",
      });
      expect(result.error).toContain("phone: must be E.164");
    });
  });

  describe("dry run", () => {
    test("sends nothing, keeps the cursor and the state, and is recorded", async () => {
      const { deps, storage, workflows, inbound, outbound, runs } = await setup();
      await ensureWorkflow(storage, "test-flow");
      await inbound("hello");
      const wf = workflow(async (ctx) => {
        for (const msg of await ctx.poll()) await ctx.reply(msg, "would reply");
        await ctx.state.set("seen", 1);
        expect(await ctx.state.get("seen")).toBe(1);
      });
      const result = await runWorkflow(deps(), wf, { trigger: "manual", dryRun: true });
      expect(result.status).toBe("ok");
      expect(result.sends).toMatchObject([{ phone: PHONE, message: "would reply", dryRun: true }]);
      expect(await outbound()).toHaveLength(0);
      expect(await getState(workflows, "test-flow", "seen")).toBeUndefined();
      expect(await runs()).toMatchObject([{ dryRun: true, status: "ok", handled: 1 }]);
      // The real run still sees the message.
      const real = await runWorkflow(deps(), wf, { trigger: "manual" });
      expect(real.sends).toMatchObject([{ dryRun: false }]);
      expect(await outbound()).toHaveLength(1);
    });
  });
});

describe.each(clockDialects)("on $name, on a clock the test moves", (dialect) => {
  const setup = setups(dialect);

  test("purgeRunsOlderThan deletes ended runs that started before the cut-off, and keeps newer and running ones", async () => {
    const { storage, workflows, clock, runs } = await setup();
    const day = 24 * 60 * 60_000;
    const started = async (id: string, ageDays: number, end: boolean) => {
      clock.t -= ageDays * day;
      await workflows.startRun({ id, workflow: "test-flow", trigger: "schedule", dryRun: false });
      clock.t += ageDays * day;
      if (end) await finishRun(storage, { id, workflow: "test-flow", dryRun: true, status: "ok", handled: 0 });
    };
    await started("old-ok", 31, true);
    await started("old-running", 31, false);
    await started("recent", 29, true);
    await started("today", 0, true);
    expect(await workflows.purgeRunsOlderThan(30 * day)).toBe(1);
    expect((await runs()).map((r) => r.id).sort()).toEqual(["old-running", "recent", "today"]);
  });
});

describe("loader", () => {
  test("loads good files; reports bad, broken and duplicate ones with their path; ignores tests", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-wf-"));
    const good = `export default { name: "good", schedule: "*/10 * * * * *", run() {} };`;
    writeFileSync(join(dir, "a-good.ts"), good);
    writeFileSync(join(dir, "b-dup.ts"), good);
    writeFileSync(join(dir, "c-shape.ts"), `export default { name: "Bad Name", schedule: "nope", run: 1 };`);
    writeFileSync(join(dir, "d-broken.ts"), `export default {{{`);
    writeFileSync(join(dir, "e-none.js"), `export const x = 1;`);
    writeFileSync(join(dir, "a-good.test.ts"), `throw new Error("tests are not workflows")`);
    writeFileSync(join(dir, "notes.md"), `# not code`);
    const { workflows, problems } = await loadWorkflows(dir);
    expect(workflows.map((w) => w.name)).toEqual(["good"]);
    const byFile = Object.fromEntries(problems.map((p) => [p.path.slice(dir.length + 1), p.reason]));
    expect(Object.keys(byFile).sort()).toEqual(["b-dup.ts", "c-shape.ts", "d-broken.ts", "e-none.js"]);
    expect(byFile["b-dup.ts"]).toContain('duplicate workflow name "good"');
    expect(byFile["c-shape.ts"]).toContain("name: must be lowercase");
    expect(byFile["c-shape.ts"]).toContain("schedule: must have 5 or 6 fields");
    expect(byFile["c-shape.ts"]).toContain("run: must be a function");
    expect(byFile["d-broken.ts"]).toContain("failed to load");
    expect(byFile["e-none.js"]).toContain("no default export");
  });

  test("a schedule croner refuses and an unknown time zone are reported", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-wf-"));
    writeFileSync(join(dir, "x.ts"), `export default { name: "x", schedule: "99 * * * *", timezone: "Mars/Olympus", run() {} };`);
    const { problems } = await loadWorkflows(dir);
    expect(problems[0]?.reason).toContain("schedule: is not a valid pattern");
    expect(problems[0]?.reason).toContain("timezone: must be an IANA time zone");
  });
});
