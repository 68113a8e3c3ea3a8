// Retention (src/retention.ts over src/db/retention.ts) on each database: rows past their
// time are purged in bounded batches, the rest (and what must never go) stays.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NewMessage, Storage } from "../../src/db/port";
import { folderStore, newMediaKey } from "../../src/media/store";
import { purgePastRetention, type RetentionSettings } from "../../src/retention";
import { dialects, quietLog, storages } from "./helpers";

const DAY_MS = 86_400_000;
const PHONE = "+14155550123";
const KEEP_ALL: RetentionSettings = { EVENTS_RETENTION_DAYS: 30, GENERATIONS_RETENTION_DAYS: 30, WORKFLOW_RUNS_RETENTION_DAYS: 30 };

let seq = 0;
const message = (over: Partial<NewMessage> = {}): NewMessage => ({
  id: `msg-${++seq}`, phone: PHONE, body: "hello", direction: "outbound", status: "delivered", network: "loopback", networkId: null, ...over,
});

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe.each(dialects)("retention on $name", (dialect) => {
  const fresh = storages(dialect);

  async function setup() {
    const storage = await fresh();
    const dir = mkdtempSync(join(tmpdir(), "tw-retention-"));
    dirs.push(dir);
    const media = folderStore(dir);
    const reports: [string, number][] = [];
    const rows = (select: string) => dialect.rows(storage, select);
    /** Moves rows of `table` matching `where` back by `days` (its `column` in ms, or µs). */
    const age = (table: string, column: string, days: number, where = "true", unit = 1) =>
      rows(`UPDATE ${table} SET ${column} = ${column} - ${days * DAY_MS * unit} WHERE ${where}`);
    const round = (settings: RetentionSettings, batch = 500) =>
      purgePastRetention({ storage, media, log: quietLog, onPurged: (table, n) => void reports.push([table, n]), batch }, settings, DAY_MS);
    return { storage, media, dir, reports, rows, age, round };
  }

  const generation = (storage: Storage, id: string) =>
    storage.generations.insert({ id, phone: PHONE, body: "hi", model: "m", language: null });

  test("generations past GENERATIONS_RETENTION_DAYS go in batches of at most `batch`, each counted; newer ones stay", async () => {
    const { storage, reports, rows, age, round } = await setup();
    for (let i = 0; i < 5; i++) await generation(storage, `old-${i}`);
    // Stored at the database's clock, the time it answers.
    const at = await generation(storage, "recent");
    expect((await rows("SELECT created_at FROM generations WHERE id = 'recent'")).map((r) => Number(r.created_at))).toEqual([at]);
    await age("generations", "created_at", 31, "id LIKE 'old-%'");
    await age("generations", "created_at", 29, "id = 'recent'");
    expect(await round(KEEP_ALL, 2)).toEqual({ generations: 5 });
    expect(reports).toEqual([["generations", 2], ["generations", 2], ["generations", 1]]);
    expect((await rows("SELECT id FROM generations")).map((r) => r.id)).toEqual(["recent"]);
    expect(await round(KEEP_ALL, 2)).toEqual({});
  });

  test("events, settled deliveries and status reports follow EVENTS_RETENTION_DAYS; idempotency keys their 24 hours", async () => {
    const { storage, rows, age, round } = await setup();
    await storage.messages.insert(message({ id: "in-1", direction: "inbound", status: "received" }));
    await storage.messages.insert(message({ id: "in-2", direction: "inbound", status: "received" }));
    await storage.messages.recordStatusReport({ messageId: "in-1", network: "loopback", networkStatus: "x", status: "delivered", reportedAt: 0, applied: false, error: null });
    await storage.idempotency.tryInsertPending({ scope: "s", key: "k" }, "f", 1000);
    const [first] = await rows("SELECT id FROM events ORDER BY timestamp");
    await age("events", "timestamp", 8, `id = '${first!.id}'`, 1000);
    await age("status_reports", "received_at", 8);
    await age("idempotency_keys", "created_at", 2);
    expect(await round({ ...KEEP_ALL, EVENTS_RETENTION_DAYS: 7 })).toEqual({ events: 1, status_reports: 1, idempotency_keys: 1 });
    expect(await rows("SELECT count(*) AS n FROM events")).toEqual([{ n: 1 }]);
  });

  test("without MESSAGE_RETENTION_DAYS messages are kept, however old", async () => {
    const { storage, rows, age, round } = await setup();
    await storage.messages.insert(message());
    await age("messages", "timestamp", 3650, "true", 1000);
    expect(await round(KEEP_ALL)).toEqual({});
    expect(await rows("SELECT count(*) AS n FROM messages")).toEqual([{ n: 1 }]);
  });

  test("with MESSAGE_RETENTION_DAYS old messages go with their media rows, files and reactions; opt-outs, pending sends and newer messages stay", async () => {
    const { storage, media, rows, age, round } = await setup();
    const keys = [newMediaKey(), newMediaKey()];
    for (const key of keys) await media.put(key, new Uint8Array([1, 2, 3]), "image/png");
    await storage.messages.insert(message({ id: "old-media", media: keys.map((storeKey, i) => ({ id: `med-${i}`, contentType: "image/png", size: 3, storeKey })) }));
    await storage.messages.insert(message({ id: "old-inbound", direction: "inbound", status: "received", body: "STOP" }));
    await storage.messages.react("old-media", "inbound", PHONE, "love");
    await storage.contacts.setOptedOut(PHONE, true);
    await storage.messages.insert(message({ id: "old-scheduled", status: "scheduled", sendAt: Date.now() + 300 * DAY_MS }));
    await storage.messages.insert(message({ id: "old-queued", status: "queued" }));
    await storage.messages.insert(message({ id: "recent" }));
    await age("messages", "timestamp", 91, "id LIKE 'old-%'", 1000);
    await age("messages", "timestamp", 89, "id = 'recent'", 1000);

    expect(await round({ ...KEEP_ALL, MESSAGE_RETENTION_DAYS: 90 }, 1)).toEqual({ messages: 2 });
    expect((await rows("SELECT id FROM messages ORDER BY id")).map((r) => r.id)).toEqual(["old-queued", "old-scheduled", "recent"]);
    expect(await rows("SELECT count(*) AS n FROM media")).toEqual([{ n: 0 }]);
    expect(await rows("SELECT count(*) AS n FROM reactions")).toEqual([{ n: 0 }]);
    for (const key of keys) expect(await Bun.file(join(media.describe.slice("folder ".length), key)).exists()).toBe(false);
    expect(await storage.contacts.get(PHONE)).toMatchObject({ optedOut: true });
    // The contact's count follows the purge (a history page's total).
    expect((await storage.messages.history(PHONE, 10, 0)).total).toBe(3);
  });
});
