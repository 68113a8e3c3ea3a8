/**
 * No two runs of one workflow overlap, in one process (croner's `protect`) or in several
 * processes sharing the database (the lease) — docs/workflows.md, README "No overlapping runs".
 *
 * Two servers on one database file load the same slow workflow (a run takes ~1.5 s, the
 * schedule fires every second in both). Each run writes its start and end, with the
 * process id, into a file beside the database; the runs recorded in `workflow_runs` are
 * checked the same way.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { lines, spawnServer, startServer, tempDb, type Server, type Spawned, waitFor } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const db = tempDb();
const servers: Server[] = [];
const spawned: Spawned[] = [];

afterAll(() => {
  for (const s of servers) s.kill();
  for (const p of spawned) p.kill();
  db.cleanup();
});



interface Interval {
  who: string;
  token: string;
  start: number;
  end: number;
}

/** Fails naming the first two intervals (sorted by start) that overlap. */
function expectNoOverlap(intervals: Interval[], what: string): void {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1]!;
    const cur = sorted[i]!;
    if (cur.start < prev.end) {
      throw new Error(`${what}: run ${cur.token} (${cur.who}) started at ${cur.start}, before run ${prev.token} (${prev.who}) ended at ${prev.end}`);
    }
  }
}

test(
  "two processes on one database, a slow workflow every second: no two runs ever overlap",
  async () => {
    const wfDir = join(db.dir, "workflows");
    mkdirSync(wfDir);
    const trace = join(db.dir, "trace.txt");
    writeFileSync(
      join(wfDir, "slow.ts"),
      `import { appendFileSync } from "node:fs";
export default {
  name: "slow",
  schedule: "* * * * * *",
  async run(ctx) {
    const token = crypto.randomUUID();
    appendFileSync(${JSON.stringify(trace)}, ["start", process.pid, token, Date.now()].join(" ") + "\\n");
    ctx.log.info("slow run", { pid: process.pid });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    appendFileSync(${JSON.stringify(trace)}, ["end", process.pid, token, Date.now()].join(" ") + "\\n");
  },
};
`,
    );
    const env = { WORKFLOWS_DIR: wfDir };
    // One after the other: two processes creating a fresh database at the same moment can
    // fail to start (see "a process that opens a fresh database ..." below), which is not
    // what this test is about.
    const a = await startServer({ dbPath: db.path, env });
    servers.push(a);
    // The second process is a worker alone (\`bun run start worker\`: no HTTP).
    const b = spawnServer({ dbPath: db.path, mode: "worker", env });
    spawned.push(b);
    await waitFor("the worker to schedule the workflow", 15_000, () => b.stdout.includes("workflow slow scheduled"), () => b.stdout);

    const trail = async () => lines(await Bun.file(trace).text().catch(() => ""));
    const ended = (t: string[]) => t.filter((l) => l.startsWith("end ")).map((l) => l.split(" ")[1]!);
    const context = () => `--- trace ---\n${existsSync(trace) ? readFileSync(trace, "utf8") : ""}\n--- all ---\n${a.stdout.slice(-2000)}\n--- worker ---\n${b.stdout.slice(-2000)}`;
    // Both contend for every tick for a while.
    await waitFor("four runs", 20_000, async () => ended(await trail()).length >= 4, context);

    // The process that ran last stops (gracefully); the other one must take over.
    const lastPid = ended(await trail()).at(-1)!;
    const ranIn = (out: string) => out.split("\n").some((l) => l.includes('"msg":"slow run"') && new RegExp(`"pid":${lastPid}[,}]`).test(l));
    const [first, second] = ranIn(a.stdout) ? [a, b] : [b, a];
    expect(ranIn(first.stdout)).toBe(true);
    expect(await first.stop()).toBe(0);
    const before = ended(await trail()).length;
    await waitFor(
      "the other process to run the workflow twice after the first stopped",
      15_000,
      async () => ended(await trail()).slice(before).filter((p) => p !== lastPid).length >= 2,
      context,
    );
    expect(await second.stop()).toBe(0);

    const t = lines(await Bun.file(trace).text());
    const byToken = new Map<string, Partial<Interval>>();
    for (const line of t) {
      const [kind, pid, token, at] = line.split(" ");
      const entry = byToken.get(token!) ?? { who: `pid ${pid}`, token: token! };
      if (kind === "start") entry.start = Number(at);
      else entry.end = Number(at);
      byToken.set(token!, entry);
    }
    const intervals = [...byToken.values()] as Interval[];
    // Every run that started also ended (the graceful stop waited for it).
    for (const i of intervals) expect({ token: i.token, ended: Number.isFinite(i.end) }).toEqual({ token: i.token, ended: true });
    expect(intervals.length).toBeGreaterThanOrEqual(5);

    expectNoOverlap(intervals, "runs across both processes (lease)");
    const pids = [...new Set(intervals.map((i) => i.who))];
    for (const pid of pids) expectNoOverlap(intervals.filter((i) => i.who === pid), `runs within ${pid} (protect)`);
    expect(b.stdout).not.toContain("listening on");
    // Both processes ran the workflow (the second at least once the first had stopped).
    expect(pids).toHaveLength(2);

    // The run records agree: one per run in the file, all finished, none overlapping.
    const sqlite = new Database(db.path, { readonly: true });
    let rows: { id: string; status: string; startedAt: number; endedAt: number | null }[];
    try {
      rows = sqlite
        .query("SELECT id, status, started_at AS startedAt, ended_at AS endedAt FROM workflow_runs WHERE workflow = 'slow' ORDER BY started_at")
        .all() as typeof rows;
    } finally {
      sqlite.close();
    }
    expect(rows.length).toBe(intervals.length);
    expect(rows.filter((r) => r.status !== "ok" || r.endedAt === null)).toEqual([]);
    expectNoOverlap(
      rows.map((r) => ({ who: "workflow_runs", token: r.id, start: r.startedAt, end: r.endedAt! })),
      "workflow_runs rows",
    );
  },
  60_000,
);

test(
  "a process that opens a fresh database while another holds its write lock waits for it instead of failing",
  async () => {
    // What a second server meets when it starts beside a first one that is creating the
    // database file (switching it to WAL, applying migrations): README "Several processes
    // may share one database file"; src/db/sqlite/open.ts: "busy_timeout waits for the other
    // process's write lock instead of failing".
    const fresh = tempDb();
    try {
      const holder = new Database(fresh.path, { create: true });
      holder.run("BEGIN EXCLUSIVE");
      holder.run("CREATE TABLE holder_of_the_lock (x)");
      let released = false;
      const release = Bun.sleep(1500).then(() => {
        holder.run("COMMIT");
        holder.close();
        released = true;
      });
      let server: Server | undefined;
      let failure: unknown;
      try {
        server = await startServer({ dbPath: fresh.path });
        servers.push(server);
      } catch (err) {
        failure = err;
      }
      await release;
      expect(released).toBe(true);
      if (failure) throw new Error(`the server did not wait for the lock (held 1.5 s, busy_timeout is 5 s): ${String(failure).slice(0, 1500)}`);
      expect(server!.url).toStartWith("http://127.0.0.1:");
      expect((await server!.fetch("/api/messages/poll")).status).toBe(200);
    } finally {
      fresh.cleanup();
    }
  },
  30_000,
);

test(
  "\`bun run start api\` serves HTTP and runs no workflow",
  async () => {
    const own = tempDb();
    try {
      const wfDir = join(own.dir, "workflows");
      mkdirSync(wfDir);
      const trace = join(own.dir, "trace.txt");
      writeFileSync(
        join(wfDir, "busy.ts"),
        `import { appendFileSync } from "node:fs";
export default { name: "busy", schedule: "* * * * * *", run() { appendFileSync(${JSON.stringify(trace)}, "ran\\n"); } };
`,
      );
      const api = await startServer({ dbPath: own.path, mode: "api", env: { WORKFLOWS_DIR: wfDir } });
      servers.push(api);
      // More than two ticks of the schedule.
      await Bun.sleep(2500);
      expect(await Bun.file(trace).exists()).toBe(false);
      expect(api.stdout).not.toContain("workflow busy");
      expect(await api.stop()).toBe(0);
      const sqlite = new Database(own.path, { readonly: true });
      try {
        expect(sqlite.query("SELECT count(*) AS n FROM workflow_runs").get()).toEqual({ n: 0 });
      } finally {
        sqlite.close();
      }
    } finally {
      own.cleanup();
    }
  },
  30_000,
);
