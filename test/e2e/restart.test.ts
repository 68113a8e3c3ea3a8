// Messages survive a graceful stop and a restart on the same database; SIGTERM and
// SIGINT finish in-flight requests and exit 0 (docs/operations.md, docs/api.md).
import { afterAll, afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectStrictlyIncreasing, history, inbound, newPhone, poll, send, type SendResult } from "./api";
import { newApiKey, startServer, testDatabase, type Server, type TestDatabase } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const servers: Server[] = [];
const dbs: TestDatabase[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.kill();
});
afterAll(async () => {
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((db) => db.cleanup()));
}, 120_000);

async function boot(db: TestDatabase, apiKey: string): Promise<Server> {
  const s = await startServer({ db, apiKey });
  servers.push(s);
  return s;
}
async function newDb(): Promise<TestDatabase> {
  const db = await testDatabase();
  dbs.push(db);
  return db;
}

describe("stop and start again on the same database", () => {
  test("SIGTERM exits 0; after a restart history and poll hold every message unchanged", async () => {
    const db = await newDb();
    const key = newApiKey();
    const phone = newPhone();
    const first = await boot(db, key);
    const sent: SendResult[] = [];
    for (let i = 0; i < 3; i++) {
      sent.push(await send(first, phone, `out ${i}`));
      sent.push(await inbound(first, phone, `in ${i}`, `net-${i}`));
    }
    const before = await history(first, phone);
    expect(before.total).toBe(6);
    expect(await first.stop("SIGTERM")).toBe(0);

    const second = await boot(db, key);
    const after = await history(second, phone);
    expect(after).toEqual(before);
    expect(after.messages.map((m) => m.id)).toEqual(sent.map((s) => s.message_id).reverse());
    const inbound_ = await poll(second, { phone });
    expect(inbound_.messages.map((m) => m.message)).toEqual(["in 0", "in 1", "in 2"]);
  });

  test("after a restart new timestamps are still later than every stored one, and network ids still deduplicate", async () => {
    const db = await newDb();
    const key = newApiKey();
    const phone = newPhone();
    const first = await boot(db, key);
    const old = [await send(first, phone, "before"), await inbound(first, phone, "hello", "net-restart")];
    expect(await first.stop()).toBe(0);

    const second = await boot(db, key);
    const redelivered = await inbound(second, phone, "hello", "net-restart");
    expect(redelivered.message_id).toBe(old[1]!.message_id);
    const fresh = await send(second, phone, "after");
    expectStrictlyIncreasing([...old.map((o) => o.timestamp), fresh.timestamp]);
    expect((await history(second, phone)).total).toBe(3);
  });

  test("SIGINT also stops gracefully with exit code 0, keeping what was stored", async () => {
    const db = await newDb();
    const key = newApiKey();
    const phone = newPhone();
    const first = await boot(db, key);
    const r = await send(first, phone, "interrupted?");
    expect(await first.stop("SIGINT")).toBe(0);
    const second = await boot(db, key);
    expect((await history(second, phone)).messages.map((m) => m.id)).toEqual([r.message_id]);
  });

  test("SIGTERM while 20 clients keep sending: exit 0, no 500, and every message answered 200 is stored", async () => {
    const db = await newDb();
    const key = newApiKey();
    const phone = newPhone();
    const first = await boot(db, key);
    type Outcome = { status: number; id?: string; timestamp?: string };
    const outcomes: Outcome[] = [];
    let stopping = false;
    // Each client sends one message after another until the server stops answering.
    const clients = Array.from({ length: 20 }, async (_, c) => {
      for (let i = 0; i < 40; i++) {
        let outcome: Outcome;
        try {
          const reply = await call<SendResult>(first, "POST", "/api/send", { body: { phone, message: `client ${c} message ${i}` } });
          outcome = { status: reply.status, id: reply.body?.message_id, timestamp: reply.body?.timestamp };
        } catch {
          outcome = { status: 0 }; // refused: the server had stopped accepting
        }
        outcomes.push(outcome);
        if (outcome.status !== 200 && stopping) return;
      }
    });
    const deadline = Date.now() + 15_000;
    while (outcomes.length < 40 && Date.now() < deadline) await Bun.sleep(2);
    stopping = true;
    const code = await first.stop("SIGTERM");
    await Promise.all(clients);
    expect(code).toBe(0);
    // Refusal while stopping may be a closed connection or 503; never a failure of an accepted request.
    expect(outcomes.filter((o) => o.status >= 500 && o.status !== 503)).toEqual([]);
    expect(outcomes.filter((o) => o.status !== 0 && o.status !== 200 && o.status !== 503)).toEqual([]);
    const accepted = outcomes.filter((o) => o.status === 200);
    expect(accepted.length).toBeGreaterThanOrEqual(40);

    const second = await boot(db, key);
    const stored = new Map<string, { timestamp: string; status: string }>();
    for (let offset = 0; ; offset += 100) {
      const page = await history(second, phone, `limit=100&offset=${offset}`);
      for (const m of page.messages) stored.set(m.id, m);
      if (page.messages.length < 100) break;
    }
    for (const a of accepted) {
      const m = stored.get(a.id!);
      if (!m) throw new Error(`message ${a.id} was answered 200 but is not stored after the restart`);
      expect(m.timestamp).toBe(a.timestamp!);
      expect(m.status).toBe("delivered");
    }
  });
});
