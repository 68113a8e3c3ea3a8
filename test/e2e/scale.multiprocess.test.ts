/**
 * Many processes on one database (README "Running on PostgreSQL"): three API processes and
 * two workers share one database, a SQLite file by default and a PostgreSQL database in the
 * PostgreSQL pass, and every guarantee holds across them as it does within one process:
 * the poll cursor with writers on every node, one send per Idempotency-Key, one reply per
 * inbound message when a worker dies mid-run, no overlapping runs, nothing acknowledged
 * lost when a node dies, and migrations applied once by processes that start together.
 */
import { afterAll, afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { call, expectEachOnce, followPoll, history, inbound, newPhone, type SendResult } from "./api";
import {
  ROOT,
  gone,
  newApiKey,
  spawnServer,
  startServer,
  testDatabase,
  waitFor,
  type EnvOverlay,
  type Server,
  type Spawned,
  type TestDatabase,
} from "./harness";
import { compareAcks, expectRunsNeverOverlap, storedLoad, writeLoad, writeSlowWorkflow, type Ack, type LoadState } from "./scenarios";
import { startFakeOpenAI } from "../support/fake-openai";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";

// Each test starts five processes; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const running: { kill(): void }[] = [];
const dbs: TestDatabase[] = [];
const stops: (() => Promise<void>)[] = [];
// Five processes a test on two cores: the next test starts on a quiet machine.
afterEach(() => {
  for (const p of running.splice(0)) p.kill();
});
afterAll(async () => {
  for (const stop of stops) await stop();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((db) => db.cleanup()));
}, 120_000);

interface Cluster {
  db: TestDatabase;
  apis: Server[];
  workers: Spawned[];
  /** The tail of every process's output, for a failure's message. */
  output(): string;
}

interface ClusterOptions {
  /** For every process. */
  env?: EnvOverlay;
  /** A worker's own additions (its index). */
  workerEnv?: (i: number) => EnvOverlay;
  /**
   * The workers' WORKFLOWS_DIR (made in the database's own folder, or not) and the workflow
   * whose "scheduled" line says a worker is up; default one idle workflow.
   */
  workflows?: { dir: (db: TestDatabase) => string; name: string };
  /** Start all five at the same moment on the new database; default the first API process alone first. */
  together?: boolean;
}

/** A workflow that does nothing every second, so that workers hold leases and record runs meanwhile. */
const IDLE = {
  name: "idle",
  dir(db: TestDatabase): string {
    const dir = join(db.dir, "idle-workflows");
    mkdirSync(dir);
    writeFileSync(join(dir, "idle.ts"), `export default { name: "idle", schedule: "* * * * * *", run() {} };\n`);
    return dir;
  },
};

function tracked<T extends { kill(): void }>(p: T): T {
  running.push(p);
  return p;
}

/** Three API processes (`bun run start api`) and two workers (`bun run start worker`) on one new database, with one API key. */
async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const db = await testDatabase();
  dbs.push(db);
  const apiKey = newApiKey();
  const workflows = opts.workflows ?? IDLE;
  const workflowsDir = workflows.dir(db);
  const api = async () => tracked(await startServer({ db, apiKey, mode: "api", env: opts.env }));
  const worker = async (i: number) =>
    tracked(await spawnServer({ db, apiKey, mode: "worker", env: { ...opts.env, WORKFLOWS_DIR: workflowsDir, ...opts.workerEnv?.(i) } }));

  const first = opts.together ? undefined : await api();
  const [rest, workers] = await Promise.all([Promise.all(Array.from({ length: first ? 2 : 3 }, api)), Promise.all([0, 1].map(worker))]);
  const apis = first ? [first, ...rest] : rest;
  const output = () =>
    [...apis.map((s, i) => [`api ${i}`, s] as const), ...workers.map((w, i) => [`worker ${i}`, w] as const)]
      .map(([name, p]) => `--- ${name} stdout ---\n${p.stdout.slice(-2000)}\n--- ${name} stderr ---\n${p.stderr.slice(-1000)}`)
      .join("\n");
  for (const w of workers) await waitFor(`a worker to schedule ${workflows.name}`, 15_000, () => w.stdout.includes(`workflow ${workflows.name} scheduled`), output);
  return { db, apis, workers, output };
}

test(
  "writers on all three API processes, followers polling one each with the cursor rule: every inbound message seen once, in order",
  async () => {
    const { apis } = await startCluster();
    const WRITERS_PER_NODE = 6;
    const PER_WRITER = 30;
    const total = apis.length * WRITERS_PER_NODE * PER_WRITER;
    const written: string[][] = [];
    let writersLeft = apis.length * WRITERS_PER_NODE;
    const writers = apis.flatMap((node, n) =>
      Array.from({ length: WRITERS_PER_NODE }, async (_, w) => {
        const phone = newPhone();
        const ids: string[] = [];
        written.push(ids);
        try {
          for (let i = 0; i < PER_WRITER; i++) ids.push((await inbound(node, phone, `node ${n} writer ${w} message ${i}`)).message_id);
        } finally {
          writersLeft--;
        }
      }),
    );
    const writing = () => writersLeft > 0;
    const [first, paged] = await Promise.all([
      followPoll(apis[0]!, {}, total, writing, 50_000),
      followPoll(apis[2]!, { limit: 7 }, total, writing, 50_000),
      ...writers,
    ]);

    const everything = written.flat();
    expect(new Set(everything).size).toBe(total);
    expectEachOnce("node 0", first, everything);
    expectEachOnce("node 2, limit=7", paged, everything);
    // Each writer's messages arrive in the order that writer stored them, whichever node took them.
    const position = new Map(first.seen.map((id, i) => [id, i]));
    for (const ids of written) {
      const at = ids.map((id) => position.get(id)!);
      expect(at).toEqual([...at].sort((a, b) => a - b));
    }
  },
  90_000,
);

test(
  "the same Idempotency-Key sent to three API processes at once: one send on the network, one answer",
  async () => {
    const fake: FakeTwilio = startFakeTwilio();
    stops.push(() => fake.stop());
    // A slow network widens the moment in which the three requests meet.
    fake.reply(async () => {
      await Bun.sleep(150);
      return { kind: "created" };
    });
    const { apis } = await startCluster({ env: twilioEnv(fake) });
    const KEYS = 12;
    const cases = Array.from({ length: KEYS }, (_, k) => ({ key: `scale-${k}-${crypto.randomUUID()}`, body: { phone: newPhone(), message: `once, whichever node (${k})` } }));
    const send = (node: Server, c: (typeof cases)[number]) => call<SendResult>(node, "POST", "/api/send", { body: c.body, headers: { "Idempotency-Key": c.key } });

    const answers = await Promise.all(cases.map((c) => Promise.all(apis.map((node) => send(node, c)))));
    for (const [k, c] of cases.entries()) {
      const replies = answers[k]!;
      expect({ key: k, statuses: replies.map((r) => r.status).filter((s) => s !== 200 && s !== 409) }).toEqual({ key: k, statuses: [] });
      const ok = replies.filter((r) => r.status === 200);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      expect(new Set(ok.map((r) => r.body.message_id)).size).toBe(1);
      expect({ key: k, sends: fake.sends.filter((s) => s.body.To === c.body.phone).length }).toEqual({ key: k, sends: 1 });
    }
    const statuses = answers.flat().map((r) => r.status);
    console.log(`idempotency across three nodes: ${statuses.filter((s) => s === 200).length} answered 200, ${statuses.filter((s) => s === 409).length} 409, ${fake.sends.length} sends`);
    // Once settled, a retry on any node replays the first answer and sends nothing.
    for (const [k, c] of cases.entries()) {
      const id = answers[k]!.find((r) => r.status === 200)!.body.message_id;
      for (const node of apis) {
        const again = await send(node, c);
        expect({ key: k, status: again.status, id: again.body.message_id }).toEqual({ key: k, status: 200, id });
      }
      expect((await history(apis[1]!, c.body.phone)).total).toBe(1);
    }
    expect(fake.sends.length).toBe(KEYS);
  },
  60_000,
);

test(
  "the shipped autoresponder on two workers, the one running it SIGKILLed mid-run: every inbound message gets exactly one reply",
  async () => {
    const model = startFakeOpenAI();
    stops.push(() => model.stop());
    // Each worker has its own key, so the model sees which worker asks. The second generation
    // is held: the worker that asked for it is in the middle of a run (usually one that has
    // already answered a contact).
    let runner: string | undefined;
    model.reply((req) => {
      if (model.requests.length !== 2) return { kind: "text", text: "Thanks for your message; a person will reply soon." };
      runner = req.authorization ?? "";
      return { kind: "hang" };
    });
    const cluster = await startCluster({
      workflows: { dir: () => join(ROOT, "workflows"), name: "autoresponder" },
      workerEnv: (i) => ({ OPENAI_API_KEY: `sk-worker-${i}`, OPENAI_BASE_URL: model.baseUrl }),
    });
    const { db, apis, workers } = cluster;
    const phones = Array.from({ length: 4 }, () => newPhone());
    for (const [i, phone] of phones.entries()) await inbound(apis[i % apis.length]!, phone, `Hello, is anyone there? (${i})`);

    // The autoresponder waits for 5 quiet seconds, then answers contact after contact.
    await waitFor("a worker to be held on the second generation", 30_000, () => runner !== undefined, cluster.output);
    const victim = workers[Number(/sk-worker-(\d)/.exec(runner!)![1])]!;
    const survivor = workers.find((w) => w !== victim)!;
    const heldAt = model.requests.length;
    victim.kill();
    await gone(victim);

    // The survivor takes over once the dead worker's lease runs out (at most 30 s).
    const outbound = async () => {
      const out = new Map<string, string[]>();
      for (const phone of phones) out.set(phone, (await history(apis[0]!, phone)).messages.filter((m) => m.direction === "outbound").map((m) => m.status));
      return out;
    };
    await waitFor("a reply to every contact", 60_000, async () => [...(await outbound()).values()].every((s) => s.length > 0), cluster.output);
    // More than one tick of the schedule (every 5 s): a second reply would show now.
    await Bun.sleep(6_000);

    const replies = await outbound();
    for (const phone of phones) expect({ phone, replies: replies.get(phone) }).toEqual({ phone, replies: ["delivered"] });
    // After the kill only the survivor asked the model.
    const survivorKey = runner === "Bearer sk-worker-0" ? "Bearer sk-worker-1" : "Bearer sk-worker-0";
    expect(new Set(model.requests.slice(heldAt).map((r) => r.authorization))).toEqual(new Set([survivorKey]));
    expect(survivor.proc.exitCode).toBeNull();
    // The killed run was ended as interrupted by the run that took its lease; no other run failed.
    const failed = await db.query<{ error: string }>("SELECT error FROM workflow_runs WHERE workflow = 'autoresponder' AND status IN ('error', 'timeout')");
    expect(failed).toEqual([{ error: "interrupted: the process stopped during the run" }]);
  },
  120_000,
);

test(
  "a slow workflow on both workers: no two runs ever overlap across the processes",
  async () => {
    const trace = (db: TestDatabase) => join(db.dir, "trace.txt");
    const slow = (db: TestDatabase) => {
      const dir = join(db.dir, "workflows");
      mkdirSync(dir);
      writeSlowWorkflow(dir, trace(db));
      return dir;
    };
    const { db, workers } = await startCluster({ workflows: { dir: slow, name: "slow" } });
    await expectRunsNeverOverlap(db, trace(db), workers[0]!, workers[1]!);
  },
  90_000,
);

test(
  "an API process SIGKILLed under send load on all three: every acknowledged message is stored, unchanged",
  async () => {
    const { apis } = await startCluster();
    const acks = new Map<string, Ack>();
    const states: LoadState[] = apis.map(() => ({ stopped: false, errorsBeforeStop: [] }));
    const loads = apis.map((node, n) => writeLoad(node, n, acks, states[n]!, 16));
    const acked = (n: number) => [...acks.values()].filter((a) => a.round === n).length;
    await waitFor("the load to flow on every node", 15_000, () => apis.every((_, n) => acked(n) >= 20));
    await Bun.sleep(1_000);
    // Node 1 dies in the middle of its load; the others go on writing a while.
    states[1]!.stopped = true;
    apis[1]!.kill();
    await gone(apis[1]!);
    await Bun.sleep(1_000);
    states[0]!.stopped = true;
    states[2]!.stopped = true;
    await Promise.all(loads);

    for (const state of states) expect(state.errorsBeforeStop.slice(0, 10)).toEqual([]);
    for (const node of [apis[0]!, apis[2]!]) {
      const { missing, changed } = compareAcks(acks, await storedLoad(node));
      expect(missing.slice(0, 20)).toEqual([]);
      expect(changed.slice(0, 20)).toEqual([]);
    }
  },
  60_000,
);

test(
  "five processes started at the same moment on a new database: all come up, and each migration is applied once",
  async () => {
    const { db, apis, output } = await startCluster({ together: true });
    const journal = JSON.parse(readFileSync(join(ROOT, "drizzle", db.dialect, "meta", "_journal.json"), "utf8")) as { entries: unknown[] };
    const table = db.dialect === "postgres" ? "drizzle.__drizzle_migrations" : "__drizzle_migrations";
    const [applied] = await db.query<{ n: number; hashes: number }>(`SELECT count(*) AS n, count(DISTINCT hash) AS hashes FROM ${table}`);
    expect(applied).toEqual({ n: journal.entries.length, hashes: journal.entries.length });
    // Every node serves, on the one schema, and no process logged an error on the way.
    const phone = newPhone();
    for (const node of apis) expect((await call(node, "POST", "/api/send", { body: { phone, message: "after the race" } })).status).toBe(200);
    expect((await history(apis[0]!, phone)).total).toBe(apis.length);
    expect(output()).not.toContain('"level":"error"');
  },
  60_000,
);
