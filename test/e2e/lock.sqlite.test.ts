// Another process holds the SQLite file's write lock (as a second Textwire, the CLI, a
// `sqlite3` shell or a backup may) until the test lets it go: the server never waits for it
// on its event loop (docs/storage.md, "Locks held by another process").
// - history, poll and media reads answer as fast as without the lock;
// - /health answers 503 within 2.5 s every time;
// - a send waits up to the busy limit (5 s) without blocking the reads, then answers 503;
//   one still waiting when the lock is let go succeeds;
// - maintenance logs the busy database and tries again; the process lives;
// - after the release everything works and every acknowledged message is stored.
// SQLite only: the PostgreSQL pass does not register it (testOnSqlite).
import { afterAll, expect } from "bun:test";
import { call, history, newPhone, type ErrorBody, type Reply, type SendResult } from "./api";
import { ROOT, sqliteDatabase, startServer, testOnSqlite, waitFor, type Server } from "./harness";

/** How long the second send waits for the lock before it is let go: well under the busy limit. */
const LATE_WAIT_MS = 1_000;
/** Far from the 5 s a read would wait inside SQLite; generous for a loaded CI machine. */
const READ_MS = 1_000;
const HEALTH_MS = 2_500;

/** A second process: takes the write lock, prints when, holds it until its stdin closes, lets it go. */
const HOLDER = `import { Database } from "bun:sqlite";
const db = new Database(process.env.LOCK_FILE);
db.run("PRAGMA busy_timeout = 5000");
db.run("BEGIN IMMEDIATE");
console.log("locked at " + Date.now());
await Bun.stdin.text();
db.run("ROLLBACK");
db.close();`;

const servers: Server[] = [];
let files: ReturnType<typeof Bun.serve> | undefined;
afterAll(async () => {
  for (const s of servers) s.kill();
  await files?.stop(true);
});

/** A reply and how long it took, in ms. */
async function timed<T>(request: () => Promise<T>): Promise<{ reply: T; ms: number }> {
  const start = performance.now();
  const reply = await request();
  return { reply, ms: performance.now() - start };
}

testOnSqlite(
  "another process holds the write lock: reads answer at once, /health says 503 within 2.5 s, a send waits then answers 503, one waiting when the lock is let go succeeds; nothing acknowledged is lost",
  async () => {
    files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]), { headers: { "Content-Type": "image/jpeg" } }) });
    const db = sqliteDatabase();
    const server = await startServer({ db, env: { ALLOW_PRIVATE_URLS: "true", MAINTENANCE_INTERVAL_MS: "1000" } });
    servers.push(server);
    const phone = newPhone();
    const send = (message: string, media?: { url: string }[]) => call<SendResult & ErrorBody>(server, "POST", "/api/send", { body: { phone, message, ...(media ? { media } : {}) } });

    const first = await send("before the lock", [{ url: `http://127.0.0.1:${files.port}/photo.jpg` }]);
    expect(first.status).toBe(200);
    const acknowledged = [first.body.message_id];
    const mediaUrl = (await history(server, phone)).messages[0]!.media[0]!.url;
    const reads: Record<string, () => Promise<Reply<unknown>>> = {
      history: () => call(server, "GET", `/api/messages/${encodeURIComponent(phone)}`),
      poll: () => call(server, "GET", "/api/messages/poll"),
      media: () => call(server, "GET", mediaUrl),
    };
    const slowest: Record<string, { before: number; during: number }> = {};
    for (const [name, read] of Object.entries(reads)) {
      const { reply, ms } = await timed(read);
      expect(reply.status).toBe(200);
      slowest[name] = { before: ms, during: 0 };
    }

    const holder = Bun.spawn(["bun", "-e", HOLDER], { cwd: ROOT, env: { ...process.env, LOCK_FILE: db.url }, stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    try {
      let printed = "";
      const reader = (async () => {
        for await (const chunk of holder.stdout) printed += new TextDecoder().decode(chunk);
      })();
      const lockedAt = Number(
        (await waitFor("the other process to take the write lock", 10_000, () => /locked at (\d+)/.exec(printed)?.[1], () => printed)),
      );
      // The lock is held until the first send has been refused and the second is waiting.
      const until = (ms: number) => Date.now() < lockedAt + ms;

      const blocked = timed(() => send("while locked"));
      const healthProbes = (async () => {
        const probes: { status: number; ms: number }[] = [];
        while (until(5_000)) {
          // A probe that times out (status 0) fails below, with the reads' times.
          const { reply, ms } = await timed(() => fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5_000) }).catch(() => ({ status: 0 })));
          probes.push({ status: reply.status, ms });
        }
        return probes;
      })();
      while (until(6_500)) {
        for (const [name, read] of Object.entries(reads)) {
          const { reply, ms } = await timed(read);
          expect(reply.status).toBe(200);
          slowest[name]!.during = Math.max(slowest[name]!.during, ms);
        }
        await Bun.sleep(50);
      }
      for (const [name, { during }] of Object.entries(slowest)) {
        if (during >= READ_MS) throw new Error(`${name} took ${Math.round(during)} ms during the lock: ${JSON.stringify(slowest)}`);
      }

      const probes = await healthProbes;
      expect(probes.length).toBeGreaterThanOrEqual(2);
      for (const probe of probes) {
        expect(probe.status).toBe(503);
        expect(probe.ms).toBeLessThan(HEALTH_MS);
      }
      const refused = await blocked;
      expect(refused.reply.status).toBe(503);
      expect(refused.reply.body.error.code).toBe("SERVICE_UNAVAILABLE");
      expect(refused.ms).toBeGreaterThan(4_000);
      expect(refused.ms).toBeLessThan(7_000);

      // Waits for the lock, which is let go LATE_WAIT_MS later: under the busy limit, so it succeeds.
      const late = timed(() => send("sent while locked, stored after the release"));
      await Bun.sleep(LATE_WAIT_MS);
      holder.stdin.end();
      const after = await late;
      expect(after.reply.status).toBe(200);
      // It waited for the lock, not answered before it.
      expect(after.ms).toBeGreaterThan(LATE_WAIT_MS / 2);
      acknowledged.push(after.reply.body.message_id);
      expect(await holder.exited).toBe(0);
      await reader;
      expect(server.stdout).toMatch(/maintenance failed; will retry[^\n]*locked/);
    } finally {
      holder.kill();
    }

    expect(server.proc.exitCode).toBeNull();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    const last = await send("after the lock");
    expect(last.status).toBe(200);
    acknowledged.push(last.body.message_id);
    const stored = (await history(server, phone)).messages.map((m) => m.id);
    expect(stored.toSorted()).toEqual(acknowledged.toSorted());
    expect(server.stdout).not.toMatch(/"level":"error"/);
    await db.cleanup();
  },
  60_000,
);
