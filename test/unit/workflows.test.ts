import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/app";
import { loadConfig } from "../../src/config";
import { AppError } from "../../src/errors";
import { createGenerator } from "../../src/generator/generator";
import { createLogger } from "../../src/log";
import { receiveLoopback } from "../../src/messages/network-events";
import { applyInboundReaction } from "../../src/messages/reactions";
import { recordInbound } from "../../src/messages/service";
import { parseIsoInstant } from "../../src/messages/time";
import { applyTyping } from "../../src/messages/typing";
import { createLoopbackNetwork } from "../../src/network/loopback";
import type { NetworkDriver } from "../../src/network/driver";
import { createLocalBackend } from "../../src/workflows/backend";
import { defineWorkflow, type Reaction, type SentMessage, type Workflow, type WorkflowContext } from "../../src/workflows/define";
import { loadWorkflows } from "../../src/workflows/loader";
import { runWorkflow, type RunnerDeps } from "../../src/workflows/runner";
import { backoffMs, ensureWorkflow, finishRun, getState } from "../../src/workflows/store";
import autoresponder from "../../workflows/autoresponder";
import { startFakeOpenAI } from "../support/fake-openai";
import { clockDialects, dialects, manualClock, quietLog, rejectionOf, storages, TEXT_ONLY, type TestDialect, oneLine, envLineOf } from "./helpers";

// The lease tests wait on real time and a real database.
setDefaultTimeout(30_000);

const PHONE = "+14155550123";

/** An app on a fresh storage: on a clock the test moves (ms) where the dialect has one, unless `realTime`. */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (opts: { replies?: string[]; realTime?: boolean; openai?: string } = {}) => {
    const clock = manualClock(Date.now());
    const storage = await fresh(dialect.movableClock && !opts.realTime ? { clock: () => clock.t * 1000 } : {});
    const config = loadConfig({ DATABASE_URL: ":memory:", ...(opts.openai ? { OPENAI_API_KEY: "sk-test", OPENAI_BASE_URL: opts.openai } : {}) });
    const app = await createApp(config, storage, createLogger("error"));
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
    const inbound = async (message: string, phone = PHONE) => (await recordInbound(storage, envLineOf("loopback"), { phone, message })).record;
    const outbound = async () => (await storage.messages.history(PHONE, 100, 0)).rows.filter((r) => r.direction === "outbound");
    const runs = () => storage.workflows.recentRuns("test-flow", 100);
    const ourTyping = async (phone = PHONE) => (await dialect.rows(storage, `SELECT our_typing_until AS "until" FROM contacts WHERE phone = '${phone}'`))[0]?.until ?? null;
    return { app, storage, workflows: storage.workflows, clock, deps, inbound, outbound, runs, ourTyping };
  };
}

/**
 * A network that records the conversation calls made to it: the loopback's capabilities, or
 * with `textOnly` an SMS network's (Twilio's: none of them); with `refuseStop`, typing off
 * answers 422 as on BlueBubbles, which stops typing only with a send.
 */
function recordingNetwork(opts: { textOnly?: boolean; refuseStop?: boolean }) {
  const calls: string[] = [];
  const loopback = createLoopbackNetwork();
  const send: NetworkDriver["send"] = async (m) => {
    calls.push(`send ${m.text}`);
    return opts.textOnly ? { networkId: `sms:${m.id}`, status: "sent" } : loopback.send(m);
  };
  const network: NetworkDriver = opts.textOnly
    ? { name: "sms", capabilities: TEXT_ONLY, send }
    : {
        ...loopback,
        send,
        async typing(_phone, on) {
          if (on || !opts.refuseStop) return void calls.push(`typing ${on ? "on" : "off"}`);
          calls.push("typing off (refused)");
          throw new AppError("UNPROCESSABLE_CONTENT", "typing: the bluebubbles server cannot stop typing without a send");
        },
        async markRead() {
          calls.push("markRead");
        },
      };
  return { network, calls };
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
          results.push(((await ctx.reply(msg, text)) as SentMessage).replayed);
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
  describe("conversation calls", () => {
    const manual = { trigger: "manual" } as const;
    /** One run of `run` as the test workflow, which must succeed. */
    const once = async (deps: RunnerDeps, run: Workflow["run"]) => {
      const result = await runWorkflow(deps, workflow(run), manual);
      if (result.status !== "ok") throw new Error(`run ${result.status}: ${result.error}`);
    };

    test("ctx.network is the network's name and capabilities", async () => {
      const { deps } = await setup();
      let seen: unknown;
      await once(deps(), (ctx) => void (seen = ctx.network));
      expect(seen).toEqual({ name: "loopback", capabilities: createLoopbackNetwork().capabilities });
    });

    test("ctx.react puts our reaction on a message and returns its record; a new one replaces it; bad input is refused", async () => {
      const { deps, storage } = await setup();
      const seen: unknown[] = [];
      let id = "";
      await once(deps(), async (ctx) => {
        id = ((await ctx.send({ phone: PHONE, message: "Your order shipped" })) as SentMessage).id;
        seen.push(await ctx.react(id, "like"), await ctx.react(id, "love"));
        seen.push(await rejectionOf(ctx.react(id, "hug" as Reaction)), await rejectionOf(ctx.react("no-such-message", "love")));
      });
      expect(seen[0]).toMatchObject({ id, message: "Your order shipped", reactions: [{ reaction: "like", direction: "outbound", phone: null }] });
      expect(seen[1]).toMatchObject({ id, reactions: [{ reaction: "love", direction: "outbound", phone: null }] });
      expect([(seen[2] as AppError).code, (seen[3] as AppError).code]).toEqual(["BAD_REQUEST", "NOT_FOUND"]);
      expect((seen[2] as AppError).message).toStartWith("reaction: must be one of love");
      expect((await storage.messages.reactionsOf([id])).get(id)?.map((r) => r.reaction)).toEqual(["love"]);
    });

    test("ctx.typing starts and stops our indicator; a message sent to the contact stops it too", async () => {
      const { deps, ourTyping } = await setup();
      const seen: unknown[] = [];
      await once(deps(), async (ctx) => {
        await ctx.typing(PHONE, true);
        seen.push(await ourTyping());
        await ctx.typing(PHONE, false);
        seen.push(await ourTyping());
        await ctx.typing(PHONE, true);
        await ctx.send({ phone: PHONE, message: "done" });
        seen.push(await ourTyping(), await rejectionOf(ctx.typing(PHONE, "yes" as unknown as boolean)));
      });
      expect(seen[0]).not.toBeNull();
      expect(seen.slice(1, 3)).toEqual([null, null]);
      expect((seen[3] as AppError).message).toBe("on: must be true or false");
    });

    test("ctx.markRead marks the contact's inbound messages read, and no one else's", async () => {
      const { deps, storage, inbound } = await setup();
      const other = "+14155550100";
      await inbound("one");
      await inbound("two");
      await inbound("hi", other);
      expect(await storage.messages.unread(PHONE)).toBe(2);
      await once(deps(), (ctx) => ctx.markRead(PHONE));
      expect([await storage.messages.unread(PHONE), await storage.messages.unread(other)]).toEqual([0, 1]);
    });

    test("ctx.isTyping says whether the contact is typing now, as the network reported it", async () => {
      const { deps, storage } = await setup();
      const seen: boolean[] = [];
      const look = (ctx: WorkflowContext) => ctx.isTyping(PHONE).then((t) => void seen.push(t));
      await once(deps(), look);
      await applyTyping(storage, { phone: PHONE, typing: true });
      await once(deps(), look);
      await applyTyping(storage, { phone: PHONE, typing: false });
      await once(deps(), look);
      expect(seen).toEqual([false, true, false]);
    });

    test("in a dry run, react, typing and markRead change nothing and say so in the log", async () => {
      const { deps, storage, inbound, ourTyping } = await setup();
      const msg = await inbound("hello");
      const lines: string[] = [];
      const log = createLogger("info", {}, (line) => void lines.push(line));
      let reacted: unknown;
      const result = await runWorkflow(
        { ...deps(), log },
        workflow(async (ctx) => {
          reacted = await ctx.react(msg.id, "love");
          await ctx.typing(PHONE, true);
          await ctx.markRead(PHONE);
        }),
        { trigger: "manual", dryRun: true },
      );
      expect(result.status).toBe("ok");
      expect(reacted).toBeNull();
      expect((await storage.messages.reactionsOf([msg.id])).get(msg.id) ?? []).toEqual([]);
      expect(await ourTyping()).toBeNull();
      expect(await storage.messages.unread(PHONE)).toBe(1);
      const said = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => String(l.msg).startsWith("dry run"));
      expect(said.map((l) => [l.msg, l.workflow, l.phone ?? l.messageId])).toEqual([
        ["dry run: ctx.react changed nothing", "test-flow", msg.id],
        ["dry run: ctx.typing changed nothing", "test-flow", PHONE],
        ["dry run: ctx.markRead changed nothing", "test-flow", PHONE],
      ]);
    });

    test("once the run has stopped, each of them throws and changes nothing", async () => {
      const { deps, storage, inbound, ourTyping } = await setup();
      const msg = await inbound("hello");
      const codes: unknown[] = [];
      const wf = workflow(
        async (ctx) => {
          await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
          for (const call of [ctx.react(msg.id, "love"), ctx.typing(PHONE, true), ctx.markRead(PHONE), ctx.isTyping(PHONE)]) {
            codes.push(((await rejectionOf(call)) as AppError).code);
          }
        },
        { timeoutMs: 30 },
      );
      expect((await runWorkflow(deps(), wf, manual)).status).toBe("timeout");
      await Bun.sleep(20);
      expect(codes).toEqual(Array(4).fill("SERVICE_UNAVAILABLE"));
      expect([await ourTyping(), await storage.messages.unread(PHONE)]).toEqual([null, 1]);
    });

    test("on a network without reactions or typing, those are refused with 422 naming the network; markRead is kept by Textwire", async () => {
      const { app, deps, storage, inbound } = await setup();
      app.lines.default().driver = recordingNetwork({ textOnly: true }).network;
      const msg = await inbound("hello");
      const refused: AppError[] = [];
      let capabilities: unknown;
      await once(deps(), async (ctx) => {
        capabilities = ctx.network.capabilities;
        refused.push((await rejectionOf(ctx.typing(PHONE, true))) as AppError, (await rejectionOf(ctx.react(msg.id, "love"))) as AppError);
        await ctx.markRead(PHONE);
      });
      expect(capabilities).toEqual(TEXT_ONLY);
      expect(refused.map((e) => [e.code, e.message])).toEqual([
        ["UNPROCESSABLE_CONTENT", "typing: the sms network cannot show typing (line default)"],
        ["UNPROCESSABLE_CONTENT", "reaction: the sms network cannot send reactions (line default)"],
      ]);
      expect(await storage.messages.unread(PHONE)).toBe(0);
    });
  });
});

describe.each(clockDialects)("on $name, on a clock the test moves", (dialect) => {
  const setup = setups(dialect);

  test("the retention purge deletes ended runs that started before the cut-off, and keeps newer and running ones", async () => {
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
    expect(await storage.retention.purge("workflow_runs", 30 * day, 10)).toBe(1);
    expect((await runs()).map((r) => r.id).sort()).toEqual(["old-running", "recent", "today"]);
  });
});

describe.each(clockDialects)("the shipped autoresponder on $name", (dialect) => {
  const setup = setups(dialect);
  const model = startFakeOpenAI();
  afterAll(() => model.stop());

  /** An app whose network records the calls made to it, with the autoresponder seen (its cursor set). */
  async function autoresponderSetup(network: Parameters<typeof recordingNetwork>[0] = {}) {
    const s = await setup({ openai: model.baseUrl });
    const recorded = recordingNetwork(network);
    s.app.lines.default().driver = recorded.network;
    await ensureWorkflow(s.storage, autoresponder.name);
    /** A text from the contact `ago` ms ago (quiet long enough by default). */
    const texted = async (text: string, ago = 10_000) => {
      s.clock.t = Date.now() - ago;
      const msg = await s.inbound(text);
      s.clock.t = Date.now();
      return msg;
    };
    const run = () => runWorkflow(s.deps(), autoresponder, { trigger: "manual" });
    return { ...s, calls: recorded.calls, texted, run };
  }

  /** The model answers `text`, noting the call among the network's. */
  const modelWrites = (calls: string[], text: string) => model.reply(() => (calls.push("generate"), { kind: "text", text }));

  test("marks the conversation read, types while the generator writes, and the reply stops the typing", async () => {
    const { calls, texted, run, storage, ourTyping } = await autoresponderSetup();
    modelWrites(calls, "Hello back");
    await texted("hello");
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [{ message: "Hello back" }] });
    expect(calls).toEqual(["markRead", "typing on", "generate", "send Hello back"]);
    expect([await storage.messages.unread(PHONE), await ourTyping()]).toEqual([0, null]);
  });

  test("a generator failure stops the typing; on BlueBubbles, where a stop without a send answers 422, an opt-out while writing does not fail the run", async () => {
    const failing = await autoresponderSetup();
    model.reply({ kind: "status", status: 500 });
    await failing.texted("hello");
    const failed = await failing.run();
    expect(failed.status).toBe("error");
    expect(failing.calls).toEqual(["markRead", "typing on", "typing off"]);
    expect(await failing.ourTyping()).toBeNull();

    const bb = await autoresponderSetup({ refuseStop: true });
    model.reply(async () => {
      bb.calls.push("generate");
      await bb.storage.contacts.setOptedOut(PHONE, true);
      return { kind: "text", text: "too late" };
    });
    await bb.texted("hello");
    expect(await bb.run()).toMatchObject({ status: "ok", sends: [] });
    expect(bb.calls).toEqual(["markRead", "typing on", "generate", "typing off (refused)"]);
    expect(await bb.outbound()).toEqual([]);
  });

  test("on a network without typing or read receipts (Twilio) it answers as before and keeps the read state itself", async () => {
    const { calls, texted, run, storage } = await autoresponderSetup({ textOnly: true });
    modelWrites(calls, "Hi by SMS");
    await texted("hello");
    expect(await run()).toMatchObject({ status: "ok", sends: [{ message: "Hi by SMS", status: "sent" }] });
    expect(calls).toEqual(["generate", "send Hi by SMS"]);
    expect(await storage.messages.unread(PHONE)).toBe(0);
  });

  test("never answers a reaction: a tapback, an SMS reaction text quoting our reply, or one quoting anything else", async () => {
    const { app, calls, texted, run, storage, outbound } = await autoresponderSetup();
    modelWrites(calls, "Your table is booked");
    await texted("a table for two?");
    await run();
    const reply = (await outbound())[0]!;
    calls.length = 0;
    await applyInboundReaction(storage, "loopback", { phone: PHONE, targetNetworkId: (await storage.messages.get(reply.id))!.networkId!, reaction: "like", remove: false }, quietLog);
    expect(await receiveLoopback(app, { phone: PHONE, message: "Loved “Your table is booked”" })).toMatchObject({ message_id: reply.id });
    await texted("Laughed at “something we never sent”");
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [] });
    expect(calls).toEqual([]);
    expect((await storage.messages.reactionsOf([reply.id])).get(reply.id)?.map((r) => r.reaction)).toEqual(["love"]);
  });

  test("waits while the contact is typing, but not past 30 s after its last text", async () => {
    const { calls, texted, run, storage } = await autoresponderSetup();
    modelWrites(calls, "Take your time");
    await texted("so I was thinking");
    await applyTyping(storage, { phone: PHONE, typing: true });
    expect(await run()).toMatchObject({ status: "ok", handled: 1, sends: [] });
    expect(calls).toEqual([]);
    await applyTyping(storage, { phone: PHONE, typing: false });
    expect(await run()).toMatchObject({ status: "ok", handled: 0, sends: [{ message: "Take your time" }] });


    // An indicator the network never stopped: answered 30 s after the last text.
    const stuck = await autoresponderSetup();
    modelWrites(stuck.calls, "Still there?");
    await stuck.texted("and another thing", 31_000);
    await applyTyping(stuck.storage, { phone: PHONE, typing: true });
    expect(await stuck.run()).toMatchObject({ status: "ok", sends: [{ message: "Still there?" }] });
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
