/**
 * No two runs of one workflow overlap, in one process (croner's `protect`) or in several
 * processes sharing the database (the lease) — docs/workflows.md, README "No overlapping runs".
 *
 * Two servers on one database load the same slow workflow (a run takes ~1.5 s, the
 * schedule fires every second in both). Each run writes its start and end, with the
 * process id, into a file in the test's folder; the runs recorded in `workflow_runs` are
 * checked the same way.
 */
import { Database } from "bun:sqlite";
import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { testOnSqlite, spawnServer, sqliteDatabase, startServer, testDatabase, type Server, type Spawned, waitFor } from "./harness";
import { expectRunsNeverOverlap, writeSlowWorkflow } from "./scenarios";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const db = await testDatabase();
const servers: Server[] = [];
const spawned: Spawned[] = [];

afterAll(async () => {
  for (const s of servers) s.kill();
  for (const p of spawned) p.kill();
  await db.cleanup();
});

test(
  "two processes on one database, a slow workflow every second: no two runs ever overlap",
  async () => {
    const wfDir = join(db.dir, "workflows");
    mkdirSync(wfDir);
    const trace = join(db.dir, "trace.txt");
    writeSlowWorkflow(wfDir, trace);
    const env = { WORKFLOWS_DIR: wfDir };
    // One after the other: racing start-ups are scale.multiprocess.test.ts's subject.
    const a = await startServer({ db, env });
    servers.push(a);
    // The second process is a worker alone (\`bun run start worker\`: no HTTP).
    const b = await spawnServer({ db, mode: "worker", env });
    spawned.push(b);
    await waitFor("the worker to schedule the workflow", 15_000, () => b.stdout.includes("workflow slow scheduled"), () => b.stdout);

    await expectRunsNeverOverlap(db, trace, a, b);
    expect(b.stdout).not.toContain("listening on");
  },
  60_000,
);

// SQLite's own start-up race: PostgreSQL's is in scale.multiprocess.test.ts.
testOnSqlite(
  "a process that opens a fresh SQLite file while another holds its write lock waits for it instead of failing",
  async () => {
    // What a second server meets when it starts beside a first one that is creating the
    // database file (switching it to WAL, applying migrations): README "Several processes
    // may share one database file"; src/db/sqlite/open.ts: "busy_timeout waits for the other
    // process's write lock instead of failing".
    const fresh = sqliteDatabase();
    try {
      const holder = new Database(fresh.url, { create: true });
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
        server = await startServer({ db: fresh });
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
      await fresh.cleanup();
    }
  },
  30_000,
);

test(
  "\`bun run start api\` serves HTTP and runs no workflow",
  async () => {
    const own = await testDatabase();
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
      const api = await startServer({ db: own, mode: "api", env: { WORKFLOWS_DIR: wfDir } });
      servers.push(api);
      // More than two ticks of the schedule.
      await Bun.sleep(2500);
      expect(await Bun.file(trace).exists()).toBe(false);
      expect(api.stdout).not.toContain("workflow busy");
      expect(await api.stop()).toBe(0);
      expect(await own.query("SELECT count(*) AS n FROM workflow_runs")).toEqual([{ n: 0 }]);
    } finally {
      await own.cleanup();
    }
  },
  30_000,
);
