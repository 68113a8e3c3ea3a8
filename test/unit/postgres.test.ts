// What only the PostgreSQL storage does: message inserts outside a transaction that arrive
// together are written in one statement, and a message the database refuses fails alone;
// connections that break or run out; the health probe's time limit.
import { afterAll, beforeAll, expect, test } from "bun:test";
import pg from "pg";
import type { NewMessage } from "../../src/db/port";
import { openPostgresStorage, type PostgresStorage } from "../../src/db/postgres/storage";
import { describePostgres } from "../support/postgres";
import { rejectionOf } from "./helpers";

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

  test("takesWrite answers false within 2 s while another connection holds the row it writes", async () => {
    const other = new pg.Client(db().url);
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`INSERT INTO network_state (network, key, value) VALUES ('textwire', 'write-check', 'held')
                         ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`);
      const started = performance.now();
      expect(await storage.takesWrite()).toBe(false);
      expect(performance.now() - started).toBeLessThan(2_000);
      await other.query("ROLLBACK");
      expect(await storage.takesWrite()).toBe(true);
    } finally {
      await other.end();
    }
  });

  test("takesWrite answers false within 2 s when every pooled connection is busy, and the pool recovers", async () => {
    const busy = await openPostgresStorage(db().url, 2);
    try {
      let finish!: () => void;
      const held = new Promise<void>((resolve) => (finish = resolve));
      const holders = [busy.transaction(() => held), busy.transaction(() => held)];
      const started = performance.now();
      expect(await busy.takesWrite()).toBe(false);
      expect(performance.now() - started).toBeLessThan(2_000);
      finish();
      await Promise.all(holders);
      expect(await busy.takesWrite()).toBe(true);
    } finally {
      await busy.close();
    }
  });
});
