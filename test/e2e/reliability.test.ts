// The server against a busy database and a failing network, as a process (docs/operations.md):
// - writes held back past the busy timeout (another process holding SQLite's write lock; on
//   PostgreSQL the test's stand-in for it) never end the server (maintenance, lease
//   renewal), and /health says 503 meanwhile, 200 after;
// - a send the network accepted answers success even when recording it fails, the record
//   is repaired, and a retry with the same Idempotency-Key sends nothing again;
// - a send that failed frees its Idempotency-Key at once: a retry really retries.
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { call, history, newPhone, type SendResult } from "./api";
import { startServer, testDatabase, waitFor, type EnvOverlay, type Server, type TestDatabase, type WriteBlock } from "./harness";
import { startFakeTwilio, twilioEnv, type FakeTwilio, type TwilioReply } from "../support/fake-twilio";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const servers: Server[] = [];
const fakes: FakeTwilio[] = [];
afterAll(async () => {
  for (const s of servers) s.kill();
  for (const f of fakes) await f.stop();
}, 30_000);

async function serve(env: EnvOverlay = {}, db?: TestDatabase): Promise<Server> {
  const server = await startServer({ env, ...(db ? { db } : {}) });
  servers.push(server);
  return server;
}

const health = async (server: Server) => {
  const res = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, body: (await res.json()) as unknown };
};

describe("a busy database", () => {
  test("writes held back past the busy timeout across maintenance and lease renewal: the server logs, lives, and works after", async () => {
    const db = await testDatabase();
    const dir = join(db.dir, "workflows");
    mkdirSync(dir);
    // A run that outlasts the lock, so its lease (renewed every 10 s) is renewed while the lock is held.
    writeFileSync(
      join(dir, "slow.ts"),
      `export default { name: "slow", schedule: "* * * * * *", async run(ctx) { await Bun.sleep(25000); } };\n`,
    );
    const server = await serve({ WORKFLOWS_DIR: dir, MAINTENANCE_INTERVAL_MS: "1000" }, db);
    await waitFor("a workflow run to start", 15_000, async () => (await db.query("SELECT 1 FROM workflow_runs WHERE status = 'running'")).length > 0, () => server.stdout);

    const lock = await db.blockWrites();
    try {
      await waitFor(
        "maintenance and lease renewal to log the busy database",
        25_000,
        () => /maintenance failed[^\n]*locked/.test(server.stdout) && /lease renewal failed[^\n]*locked/.test(server.stdout),
        () => server.stdout,
      );
      expect(server.proc.exitCode).toBeNull();
    } finally {
      await lock.release();
    }
    expect(server.proc.exitCode).toBeNull();
    const phone = newPhone();
    const sent = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "after the lock" } });
    expect(sent.status).toBe(200);
    expect((await history(server, phone)).total).toBe(1);
  });

  test("/health: 503 while writes are held back (another process holds the write lock), 200 once they are taken again", async () => {
    const server = await serve();
    expect(await health(server)).toEqual({ status: 200, body: { status: "ok" } });
    const lock = await server.db.blockWrites();
    try {
      expect(await health(server)).toEqual({ status: 503, body: { status: "unavailable", reason: "database" } });
    } finally {
      await lock.release();
    }
    expect(await health(server)).toEqual({ status: 200, body: { status: "ok" } });
  });
});

describe("a request that meets a busy database", () => {
  test("is answered 503 SERVICE_UNAVAILABLE with Retry-After, on REST and tRPC, never 500; nothing is stored; it works once writes are taken again", async () => {
    const server = await serve();
    const phone = newPhone();
    const lock = await server.db.blockWrites();
    try {
      const [rest, trpc] = await Promise.all([
        call<{ success: false; error: { code: string; message: string } }>(server, "POST", "/api/send", { body: { phone, message: "while busy" } }),
        call<{ error: { data: { code: string; httpStatus: number } } }>(server, "POST", "/trpc/messages.send", { body: { phone, message: "while busy, tRPC" } }),
      ]);
      expect(rest.status).toBe(503);
      expect(rest.body.error.code).toBe("SERVICE_UNAVAILABLE");
      expect(rest.body.error.message).toMatch(/database/);
      expect(rest.headers.get("retry-after")).toBe("1");
      expect(trpc.status).toBe(503);
      expect(trpc.body.error.data.code).toBe("SERVICE_UNAVAILABLE");
      expect(trpc.headers.get("retry-after")).toBe("1");
    } finally {
      await lock.release();
    }
    expect(server.stdout).not.toMatch(/"level":"error"/);
    expect((await history(server, phone)).total).toBe(0);
    const sent = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "after" } });
    expect(sent.status).toBe(200);
  });
});

describe("maintenance", () => {
  test("deletes workflow run records older than WORKFLOW_RUNS_RETENTION_DAYS, and keeps newer ones", async () => {
    const server = await serve({ WORKFLOW_RUNS_RETENTION_DAYS: "1", MAINTENANCE_INTERVAL_MS: "200" });
    const db = server.db;
    const day = 24 * 60 * 60_000;
    const insert = "INSERT INTO workflow_runs (id, workflow, trigger, dry_run, started_at, ended_at, status, handled) VALUES (?, 'flow', 'schedule', false, ?, ?, 'ok', 0)";
    await db.run(insert, "two-days-old", Date.now() - 2 * day, Date.now() - 2 * day + 1000);
    await db.run(insert, "an-hour-old", Date.now() - 3_600_000, Date.now() - 3_599_000);
    await waitFor("the old run record to be deleted", 10_000, async () => (await db.query("SELECT 1 FROM workflow_runs WHERE id = 'two-days-old'")).length === 0, () => server.stdout);
    expect(await db.query("SELECT id FROM workflow_runs")).toEqual([{ id: "an-hour-old" }]);
  });
});

describe("sends and a failing database or network", () => {
  /**
   * A keyed send whose network answer (`reply`) comes only once writes are held back, so the
   * status write after it waits out the busy timeout and fails; writes are then taken again.
   */
  async function sendWhileDatabaseBusy(reply: TwilioReply, message: string) {
    const fake = startFakeTwilio();
    fakes.push(fake);
    const server = await serve(twilioEnv(fake));
    let lock: WriteBlock | undefined;
    fake.reply(async () => {
      lock = await server.db.blockWrites();
      return reply;
    });
    const phone = newPhone();
    const body = { phone, message };
    const headers = { "Idempotency-Key": `busy-${phone}` };
    const first = call<SendResult>(server, "POST", "/api/send", { body, headers });
    await fake.waitForSends(1);
    fake.reply({ kind: "created" });
    await waitFor("the status write to fail", 20_000, () => /status[^\n]*locked/.test(server.stdout), () => server.stdout);
    await lock?.release();
    return { fake, server, phone, answer: await first, retry: () => call<SendResult>(server, "POST", "/api/send", { body, headers }) };
  }

  test("the network accepts but the status write fails: success, one send, record repaired, a retry sends nothing", async () => {
    const { fake, server, phone, answer, retry } = await sendWhileDatabaseBusy({ kind: "created" }, "accepted, then the database was busy");
    expect(answer.status).toBe(200);
    expect(answer.body.success).toBe(true);
    expect(answer.body.message_id).toMatch(/\S/);
    expect(answer.body.timestamp).toMatch(/Z$/);

    const repaired = await waitFor("the record to be repaired", 20_000, async () => {
      const [m] = (await history(server, phone)).messages;
      return m?.status === "sent" && m;
    });
    expect(repaired.id).toBe(answer.body.message_id);
    const again = await retry();
    expect(again.status).toBe(200);
    expect(again.body.message_id).toBe(answer.body.message_id);
    expect(fake.sends.length).toBe(1);
  });

  test("a send that failed with 502 frees its Idempotency-Key at once, even when the database was busy: the retry really sends", async () => {
    const failure: TwilioReply = { kind: "error", httpStatus: 500, code: 20500, message: "Internal Server Error" };
    const { fake, answer, retry } = await sendWhileDatabaseBusy(failure, "try again");
    expect(answer.status).toBe(502);
    const again = await retry();
    expect(again.status).toBe(200);
    expect(fake.sends.length).toBe(2);
  });
});
