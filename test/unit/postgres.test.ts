// What only the PostgreSQL storage does: message inserts outside a transaction that arrive
// together are written in one statement, and a message the database refuses fails alone;
// connections that break or run out; the health probe's time limit.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import pg from "pg";
import type { NewMessage } from "../../src/db/port";
import { openPostgresStorage, type PostgresStorage } from "../../src/db/postgres/storage";
import { describePostgres } from "../support/postgres";
import { rejectionOf } from "./helpers";

// A real database and real timers: bun's 5 s default per test is too short on a busy CI machine.
setDefaultTimeout(30_000);

const message = (id: string, body = "hi"): NewMessage => ({ id, phone: "+14155550123", body, direction: "outbound", status: "queued", network: "loopback", networkId: null });

describePostgres("the PostgreSQL storage", (db) => {
  let storage: PostgresStorage;
  beforeAll(async () => {
    storage = await openPostgresStorage(db().url, 4);
  });
  afterAll(() => storage?.close());

  test("inserts that arrive together take consecutive timestamps in arrival order", async () => {
    const rows = await Promise.all(Array.from({ length: 50 }, (_, i) => storage.messages.insert(message(`burst-${i}`))));
    const stamps = rows.map((r) => r.row.timestamp);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]!).toBeGreaterThan(stamps[i - 1]!);
    const stored = await storage.pool.query<{ id: string; timestamp: number }>(`SELECT id, timestamp FROM messages WHERE id LIKE 'burst-%' ORDER BY timestamp`);
    expect(stored.rows.map((r) => r.id)).toEqual(rows.map((r) => r.row.id));
    expect(stored.rows.map((r) => r.timestamp)).toEqual(stamps);
  });

  test("a message the database refuses fails alone; the others of its batch are stored", async () => {
    // PostgreSQL text holds no NUL character (the API never lets one through).
    const results = await Promise.allSettled([
      storage.messages.insert(message("ok-1")),
      storage.messages.insert(message("ok-2")),
      storage.messages.insert(message("bad", "nul \u0000 here")),
      storage.messages.insert(message("ok-3")),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    expect(await storage.messages.get("bad")).toBeUndefined();
    expect((await storage.messages.get("ok-3"))?.id).toBe("ok-3");
    // The storage keeps working.
    expect((await storage.messages.insert(message("after"))).created).toBe(true);
    expect(String(await rejectionOf(storage.messages.insert(message("bad-again", "\u0000"))))).toContain("0x00");
  });

  test("status moves that arrive together go in one statement: each caller learns whether its own moved, one event each", async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `move-${i}`);
    for (const id of ids) await storage.messages.insert(message(id));
    const events = async () => (await storage.pool.query<{ n: string }>(`SELECT count(*) AS n FROM events WHERE message_id LIKE 'move-%'`)).rows[0]!.n;
    const before = Number(await events());
    // Every message to sent at once, the first also to delivered (after its move to sent, one
    // batch later: two moves of one message never share a statement), and a refused move (queued → queued).
    const results = await Promise.all([
      ...ids.map((id) => storage.messages.setStatus(id, "sent", { networkId: `net-${id}` })),
      storage.messages.setStatus("move-0", "delivered"),
      storage.messages.setStatus("move-1", "queued"),
    ]);
    expect(results).toEqual([...ids.map(() => true), true, false]);
    const rows = await storage.pool.query<{ id: string; status: string; network_id: string }>(`SELECT id, status, network_id FROM messages WHERE id LIKE 'move-%' ORDER BY id`);
    expect(rows.rows.filter((r) => r.status === "sent").length).toBe(39);
    expect(rows.rows.find((r) => r.id === "move-0")).toEqual({ id: "move-0", status: "delivered", network_id: "net-move-0" });
    expect(rows.rows.every((r) => r.network_id === `net-${r.id}`)).toBe(true);
    // One status event per applied move, none for the refused one.
    expect(Number(await events()) - before).toBe(41);
    // Few transactions wrote the 41 moves (a row's xmin is the transaction that last wrote it), not one each.
    const writers = await storage.pool.query<{ n: string }>(`SELECT count(DISTINCT xmin::text) AS n FROM messages WHERE id LIKE 'move-%'`);
    expect(Number(writers.rows[0]!.n)).toBeLessThanOrEqual(5);
  });

  test("a pooled connection lost mid-transaction is closed, and the storage goes on", async () => {
    const err = await rejectionOf(
      storage.transaction(async (tx) => {
        await tx.messages.insert(message("in-lost-tx"));
        await storage.pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND state = 'idle in transaction'`);
        await tx.networkState.get("n", "k");
      }),
    );
    expect(err).toBeInstanceOf(Error);
    expect(await storage.messages.get("in-lost-tx")).toBeUndefined();
    expect((await storage.messages.insert(message("after-lost"))).created).toBe(true);
    expect(await storage.takesWrite()).toBe(true);
  });

  test("takesWrite answers false, after its own time limit, while another connection holds the row it writes", async () => {
    const other = new pg.Client(db().url);
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`INSERT INTO network_state (network, key, value) VALUES ('textwire', 'write-check', 'held')
                         ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`);
      const started = performance.now();
      expect(await storage.takesWrite()).toBe(false);
      // Its own 1.8 s limit, not the lock: the lock is held until after it answers.
      expect(performance.now() - started).toBeLessThan(5_000);
      await other.query("ROLLBACK");
      expect(await storage.takesWrite()).toBe(true);
    } finally {
      await other.end();
    }
  });

  test("takesWrite answers false, after its own time limit, when every pooled connection is busy, and the pool recovers", async () => {
    const busy = await openPostgresStorage(db().url, 2);
    try {
      let finish!: () => void;
      const held = new Promise<void>((resolve) => (finish = resolve));
      const holders = [busy.transaction(() => held), busy.transaction(() => held)];
      const started = performance.now();
      expect(await busy.takesWrite()).toBe(false);
      // Its own 1.8 s limit, not the lock: the lock is held until after it answers.
      expect(performance.now() - started).toBeLessThan(5_000);
      finish();
      await Promise.all(holders);
      expect(await busy.takesWrite()).toBe(true);
    } finally {
      await busy.close();
    }
  });
});
