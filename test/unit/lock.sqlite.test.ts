// SQLite's write lock held by another connection (as another process would): writes wait
// for it between tries up to the busy limit, then fail with an error answered 503; reads
// and timers go on meanwhile (src/db/sqlite/gate.ts, whileBusy).
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDatabaseUnavailable } from "../../src/db/errors";
import type { NewMessage } from "../../src/db/port";
import { openSqliteStorage, type SqliteStorage } from "../../src/db/sqlite/storage";
import { rejectionOf } from "./helpers";

const message = (id: string): NewMessage => ({ id, phone: "+14155550123", body: "hi", direction: "outbound", status: "queued", network: "loopback", networkId: null });

const opened: { storage: SqliteStorage; other: Database; dir: string }[] = [];
afterEach(async () => {
  for (const { storage, other, dir } of opened.splice(0)) {
    if (other.inTransaction) other.run("ROLLBACK");
    other.close();
    await storage.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A storage on a new file with one message, and a second connection on the file holding its write lock. */
async function locked(busyLimitMs?: number) {
  const dir = mkdtempSync(join(tmpdir(), "tw-lock-"));
  const storage = openSqliteStorage(join(dir, "textwire.db"), busyLimitMs === undefined ? {} : { busyLimitMs });
  await storage.messages.insert(message("m0"));
  const other = new Database(join(dir, "textwire.db"));
  opened.push({ storage, other, dir });
  other.run("BEGIN IMMEDIATE");
  return { storage, other };
}

/** How long `work` takes, in ms. */
async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

/** Reads answer at once and a 10 ms timer fires on time (bounds far from a wait inside SQLite): nothing waits on the event loop. */
async function expectReadsImmediate(storage: SqliteStorage) {
  expect(await timed(() => storage.messages.get("m0"))).toBeLessThan(250);
  expect(await timed(() => storage.messages.history("+14155550123", 10, 0))).toBeLessThan(250);
  expect(await timed(() => storage.messages.inboundAfter(0, 10))).toBeLessThan(250);
  expect(await timed(() => Bun.sleep(10))).toBeLessThan(250);
}

describe("a write while another connection holds SQLite's write lock", () => {
  test("waits without blocking reads, and completes once the lock is released", async () => {
    const { storage, other } = await locked();
    let done = false;
    const insert = storage.messages.insert(message("m1")).finally(() => (done = true));
    await Bun.sleep(200);
    expect(done).toBe(false);
    await expectReadsImmediate(storage);
    other.run("ROLLBACK");
    expect((await insert).created).toBe(true);
    expect((await storage.messages.get("m1"))?.id).toBe("m1");
  });

  test("a unit of work waits for BEGIN IMMEDIATE without holding the in-process gate: reads go on, and it commits after the release", async () => {
    const { storage, other } = await locked();
    const tx = storage.transaction(async (t) => {
      await t.messages.insert(message("m1"));
      await t.networkState.set("n", "k", "v");
    });
    await Bun.sleep(200);
    await expectReadsImmediate(storage);
    expect(await storage.networkState.get("n", "k")).toBeUndefined();
    other.run("ROLLBACK");
    await tx;
    expect((await storage.messages.get("m1"))?.id).toBe("m1");
    expect(await storage.networkState.get("n", "k")).toBe("v");
  });

  test("held past the busy limit: the write and the unit of work fail with an error answered 503, having written nothing; the storage works after", async () => {
    const { storage, other } = await locked(300);
    const started = performance.now();
    const [insertErr, txErr] = await Promise.all([
      rejectionOf(storage.messages.insert(message("m1"))),
      rejectionOf(storage.transaction((t) => t.networkState.set("n", "k", "v"))),
      expectReadsImmediate(storage),
    ]);
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(2_000);
    for (const err of [insertErr, txErr]) {
      expect((err as { code?: string }).code).toBe("SQLITE_BUSY");
      expect(isDatabaseUnavailable(err)).toBe(true);
    }
    other.run("ROLLBACK");
    expect(await storage.messages.get("m1")).toBeUndefined();
    expect(await storage.networkState.get("n", "k")).toBeUndefined();
    expect((await storage.messages.insert(message("m1"))).created).toBe(true);
  });

  test("takesWrite answers false within 2 s while reads go on, true after the release", async () => {
    const { storage, other } = await locked();
    const [answer, took] = await Promise.all([storage.takesWrite(), timed(() => expectReadsImmediate(storage))]);
    expect(answer).toBe(false);
    expect(took).toBeLessThan(1_000);
    other.run("ROLLBACK");
    expect(await storage.takesWrite()).toBe(true);
  });
});

describe("a method of several statements (its own transaction) called while another connection holds the lock", () => {
  /** Calls `method` under the other connection's lock; it must still be waiting when the lock is released. */
  async function afterRelease<T>(other: Database, method: () => Promise<T>): Promise<T> {
    other.run("BEGIN IMMEDIATE");
    let done = false;
    const call = method().finally(() => (done = true));
    await Bun.sleep(200);
    expect(done).toBe(false);
    other.run("ROLLBACK");
    return call;
  }

  test("claimDue, retryNow and the retention purge each wait, then apply exactly once", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-lock-"));
    let ms = Date.UTC(2026, 10, 21, 9, 30);
    const storage = openSqliteStorage(join(dir, "textwire.db"), { clock: () => ms * 1000 });
    const other = new Database(join(dir, "textwire.db"));
    opened.push({ storage, other, dir });
    const { webhooks } = storage;
    await webhooks.createEndpoint({ id: "we_1", url: "https://example.com/hook", events: null, description: null, secret: "whsec_1" });
    for (const id of ["in1", "in2", "in3"]) await storage.messages.insert({ ...message(id), direction: "inbound", status: "received" });
    // in1's delivery failed (to retry), in2's succeeded (to purge), in3's is pending (to claim).
    const [failed, succeeded] = await webhooks.claimDue("p", 60_000, 2, 10, []);
    await webhooks.recordAttempt(failed!.delivery.id, "p", { state: "failed", status: 410, error: "HTTP 410" });
    await webhooks.recordAttempt(succeeded!.delivery.id, "p", { state: "succeeded", status: 200, error: null });

    const claimed = await afterRelease(other, () => webhooks.claimDue("q", 60_000, 10, 10, []));
    expect(claimed).toHaveLength(1);
    expect(claimed[0]!.delivery.id).not.toBeOneOf([failed!.delivery.id, succeeded!.delivery.id]);
    expect(await webhooks.claimDue("q", 60_000, 10, 10, [])).toEqual([]);

    const retried = await afterRelease(other, () => webhooks.retryNow("we_1", failed!.delivery.id));
    expect(retried).toMatchObject({ id: failed!.delivery.id, state: "pending", attempts: 0 });
    expect((await webhooks.claimDue("q", 60_000, 10, 10, [])).map((c) => c.delivery.id)).toEqual([failed!.delivery.id]);

    ms += 20;
    const purge = (table: "webhook_deliveries" | "events") => storage.retention.purge(table, 10, 10);
    expect(await afterRelease(other, () => purge("webhook_deliveries"))).toBe(1);
    expect(await afterRelease(other, () => purge("events"))).toBe(1);
    expect((await webhooks.deliveries("we_1", 10)).map((d) => d.id).toSorted()).toEqual([failed!.delivery.id, claimed[0]!.delivery.id].toSorted());
    expect([await purge("webhook_deliveries"), await purge("events")]).toEqual([0, 0]);
  });
});
