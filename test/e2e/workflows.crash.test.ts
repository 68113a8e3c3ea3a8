/**
 * The automation worker when its process dies or is stopped in the middle of a run
 * (docs/workflows.md: "reply sends at most once per workflow and inbound message, across
 * retries, crashes and restarts ... every inbound message gets exactly one reply";
 * "every run is recorded"; README: "Shutdown waits for running runs (at most 10 s)").
 */
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { history, inbound, newPhone, type MessageRecord } from "./api";
import { gone, lines, startServer, testDatabase, type Server, type TestDatabase, waitFor } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const servers: Server[] = [];
const dbs: TestDatabase[] = [];

afterAll(async () => {
  for (const s of servers) s.kill();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((d) => d.cleanup()));
}, 120_000);

async function workspace(): Promise<{ db: TestDatabase; wfDir: string }> {
  const db = await testDatabase();
  dbs.push(db);
  const wfDir = join(db.dir, "workflows");
  mkdirSync(wfDir);
  return { db, wfDir };
}

async function boot(db: TestDatabase, wfDir: string): Promise<Server> {
  const server = await startServer({ db, env: { WORKFLOWS_DIR: wfDir } });
  servers.push(server);
  return server;
}


const output = (...list: Server[]) => () =>
  list.map((s, i) => `--- server ${i} stdout ---\n${s.stdout.slice(-3000)}\n--- server ${i} stderr ---\n${s.stderr.slice(-1500)}`).join("\n");


/** A sleep that ends early (rejecting) when the run's signal aborts: source for workflow files. */
const SLEEP_SOURCE = `const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("aborted: " + String(signal.reason)));
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); reject(new Error("aborted: " + String(signal.reason))); }, { once: true });
  });`;

const traceLines = async (path: string) => lines(await Bun.file(path).text().catch(() => ""));

interface RunRow {
  id: string;
  status: string;
  handled: number;
  startedAt: number;
  endedAt: number | null;
}
const runsOf = (db: TestDatabase, workflow: string) =>
  db.query<RunRow>('SELECT id, status, handled, started_at AS "startedAt", ended_at AS "endedAt" FROM workflow_runs WHERE workflow = ? ORDER BY started_at', workflow);

test(
  "SIGKILL in the middle of a run, then a restart on the same database: every inbound message ends with exactly one reply",
  async () => {
    const { db, wfDir } = await workspace();
    const go = join(db.dir, "go");
    const trace = join(db.dir, "trace.jsonl");
    writeFileSync(
      join(wfDir, "slow-replier.ts"),
      `import { appendFileSync, existsSync } from "node:fs";
${SLEEP_SOURCE}
export default {
  name: "slow-replier",
  schedule: "* * * * * *",
  timeoutMs: 120000,
  async run(ctx) {
    // Waits for the test to store every message, so that one run takes them all.
    if (!existsSync(${JSON.stringify(go)})) return;
    for (const msg of await ctx.poll()) {
      const sent = await ctx.reply(msg, "re: " + msg.message);
      appendFileSync(${JSON.stringify(trace)}, JSON.stringify({ pid: process.pid, inbound: msg.id, reply: sent.id, replayed: sent.replayed }) + "\\n");
      await sleep(800, ctx.signal);
    }
  },
};
`,
    );

    const first = await boot(db, wfDir);
    await waitFor("the workflow to be scheduled", 5000, () => first.stdout.includes("workflow slow-replier scheduled"), output(first));
    const phones = Array.from({ length: 5 }, () => newPhone());
    const inbounds: { id: string; phone: string; message: string }[] = [];
    for (let i = 0; i < 2; i++) {
      for (const phone of phones) {
        const message = `crash test message ${i} from ${phone}`;
        inbounds.push({ id: (await inbound(first, phone, message)).message_id, phone, message });
      }
    }
    writeFileSync(go, "go\n");

    // Kill while the run is between messages: some replies sent, others not yet.
    await waitFor("three replies from the first process", 20_000, async () => (await traceLines(trace)).length >= 3, output(first));
    first.kill();
    await gone(first);

    const atKill = await db.query<{ id: string; body: string; status: string }>("SELECT id, body, status FROM messages WHERE direction = 'outbound'");
    const firstTrace = (await traceLines(trace)).map((l) => JSON.parse(l) as { pid: number; inbound: string; reply: string; replayed: boolean });
    expect(atKill.length).toBeGreaterThanOrEqual(3);
    expect(atKill.length).toBeLessThan(inbounds.length);
    // The interrupted run is still marked running: the kill landed in the middle of it.
    const killedRuns = (await runsOf(db, "slow-replier")).filter((r) => r.status === "running");
    expect(killedRuns).toHaveLength(1);
    const queuedAtKill = atKill.filter((m) => m.status === "queued");

    const second = await boot(db, wfDir);
    const replies = async () => {
      const out = new Map<string, MessageRecord[]>();
      for (const phone of phones) out.set(phone, (await history(second, phone, "limit=100")).messages);
      return out;
    };
    const allAnswered = async () => {
      const byPhone = await replies();
      return inbounds.every((i) => byPhone.get(i.phone)!.some((m) => m.direction === "outbound" && m.message === `re: ${i.message}`));
    };
    // The dead process's lease (30 s) must run out before the restarted one may run.
    await waitFor("a reply to every inbound message after the restart", 75_000, allAnswered, () =>
      `queued at the kill: ${JSON.stringify(queuedAtKill)}\n` + output(second)(),
    );
    await waitFor("a successful run after the restart", 10_000, async () => (await runsOf(db, "slow-replier")).some((r) => r.status === "ok" && r.handled > 0), output(second));
    // A few more ticks: a duplicate would show up now.
    await Bun.sleep(2500);

    const byPhone = await replies();
    for (const i of inbounds) {
      const answers = byPhone.get(i.phone)!.filter((m) => m.direction === "outbound" && m.message === `re: ${i.message}`);
      expect({ inbound: i.message, replies: answers.length }).toEqual({ inbound: i.message, replies: 1 });
      expect(answers[0]!.status).toBe("delivered");
    }
    for (const phone of phones) {
      expect(byPhone.get(phone)!.filter((m) => m.direction === "outbound")).toHaveLength(2);
    }

    // The replies sent before the kill were replayed after it (same message), not sent again.
    const fullTrace = (await traceLines(trace)).map((l) => JSON.parse(l) as { pid: number; inbound: string; reply: string; replayed: boolean });
    for (const before of firstTrace) {
      const after = fullTrace.filter((t) => t.pid !== before.pid && t.inbound === before.inbound);
      expect(after.length).toBeGreaterThanOrEqual(1);
      for (const a of after) expect({ reply: a.reply, replayed: a.replayed }).toEqual({ reply: before.reply, replayed: true });
    }
    for (const i of inbounds) {
      const fresh = new Set(fullTrace.filter((t) => t.inbound === i.id && !t.replayed).map((t) => t.reply));
      expect({ inbound: i.message, sends: fresh.size }).toEqual({ inbound: i.message, sends: 1 });
    }

    // The restarted run took the same messages again (the cursor had not moved) and succeeded.
    const runs = await runsOf(db, "slow-replier");
    expect(runs.filter((r) => r.status === "ok").reduce((n, r) => n + r.handled, 0)).toBe(inbounds.length);
    // The killed run was ended by the next run that took the lease; no other run failed.
    const failed = runs.filter((r) => r.status === "error" || r.status === "timeout");
    expect(failed.map((r) => r.id)).toEqual([killedRuns[0]!.id]);
    expect(await db.query("SELECT error FROM workflow_runs WHERE id = ?", killedRuns[0]!.id)).toEqual([{ error: "interrupted: the process stopped during the run" }]);
    expect(runs.filter((r) => r.status === "running")).toEqual([]);
  },
  150_000,
);

test(
  "SIGTERM during a run: the process waits for it, exits 0, and the run is recorded as finished",
  async () => {
    const { db, wfDir } = await workspace();
    const trace = join(db.dir, "trace.txt");
    writeFileSync(
      join(wfDir, "graceful.ts"),
      `import { appendFileSync } from "node:fs";
${SLEEP_SOURCE}
export default {
  name: "graceful",
  schedule: "* * * * * *",
  async run(ctx) {
    const token = crypto.randomUUID();
    appendFileSync(${JSON.stringify(trace)}, "start " + token + "\\n");
    await sleep(1000, ctx.signal);
    await ctx.state.set("last", token);
    appendFileSync(${JSON.stringify(trace)}, "end " + token + "\\n");
  },
};
`,
    );
    const server = await boot(db, wfDir);

    // The moment a run has started and not ended, stop the server.
    const inFlight = await waitFor(
      "a run in progress",
      15_000,
      async () => {
        const t = await traceLines(trace);
        const last = t.at(-1);
        return last?.startsWith("start ") ? last.slice("start ".length) : undefined;
      },
      output(server),
    );
    const code = await server.stop("SIGTERM");
    expect(code).toBe(0);

    const t = await traceLines(trace);
    expect(t).toContain(`end ${inFlight}`);
    expect(t.at(-1)).toBe(`end ${inFlight}`);
    const [state] = await db.query<{ value: string }>("SELECT value FROM workflow_state WHERE workflow = 'graceful' AND key = 'last'");
    expect(state && JSON.parse(state.value)).toBe(inFlight);

    const runs = await runsOf(db, "graceful");
    expect(runs.filter((r) => r.status === "running")).toEqual([]);
    expect(runs.length).toBe(t.filter((l) => l.startsWith("start ")).length);
    expect(runs.every((r) => r.status === "ok" && r.endedAt !== null)).toBe(true);

    const log = lines(server.stdout).flatMap((l) => {
      try {
        return [JSON.parse(l) as { msg: string; workflow?: string }];
      } catch {
        return [];
      }
    });
    const shuttingDown = log.findIndex((l) => l.msg === "shutting down");
    expect(shuttingDown).toBeGreaterThanOrEqual(0);
    expect(log.slice(shuttingDown).some((l) => l.msg === "workflow run ok" && l.workflow === "graceful")).toBe(true);
    expect(log.at(-1)?.msg).toBe("stopped");
  },
  45_000,
);

test(
  "SIGTERM during a run that outlasts the 10 s grace: the run is aborted, recorded as ended, and the process exits 0",
  async () => {
    const { db, wfDir } = await workspace();
    const trace = join(db.dir, "trace.txt");
    writeFileSync(
      join(wfDir, "stubborn.ts"),
      `import { appendFileSync } from "node:fs";
export default {
  name: "stubborn",
  schedule: "* * * * * *",
  timeoutMs: 120000,
  async run(ctx) {
    appendFileSync(${JSON.stringify(trace)}, "start\\n");
    // Ignores ctx.signal: only the shutdown's abort can end this run in time.
    await new Promise((resolve) => setTimeout(resolve, 60000));
    appendFileSync(${JSON.stringify(trace)}, "end\\n");
  },
};
`,
    );
    const server = await boot(db, wfDir);
    await waitFor("a run in progress", 15_000, async () => (await traceLines(trace)).includes("start"), output(server));
    // stop() is bounded at 15 s; the grace is 10 s.
    const code = await server.stop("SIGTERM");
    expect(code).toBe(0);

    expect(await traceLines(trace)).toEqual(["start"]);
    const runs = await runsOf(db, "stubborn");
    expect(runs).toHaveLength(1);
    expect(runs[0]!.status).not.toBe("running");
    expect(runs[0]!.status).not.toBe("ok");
    expect(runs[0]!.endedAt).not.toBeNull();
    // The lease is let go, so the next start need not wait for it to expire.
    expect(await db.query("SELECT lease_owner AS owner FROM workflows WHERE name = 'stubborn'")).toEqual([{ owner: null }]);
  },
  45_000,
);
