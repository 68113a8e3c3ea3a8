// WAL checkpoints off the event loop (src/db/sqlite/checkpoints.ts): the serving connection
// never checkpoints by itself; a worker thread copies the WAL into the database file; under
// steady writes the serving connection lets the WAL restart once it holds 10,000 frames; a
// closed storage leaves a database another connection reads whole.
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NewMessage } from "../../src/db/port";
import { openSqliteStorage, type SqliteStorage } from "../../src/db/sqlite/storage";

const message = (n: number): NewMessage => ({
  id: `m${n}`,
  phone: `+1415555${String(n % 100).padStart(4, "0")}`,
  body: `message number ${n} `.repeat(4),
  direction: "inbound",
  status: "received",
  network: "loopback",
  networkId: null,
});

const dirs: string[] = [];
const storages: SqliteStorage[] = [];
afterEach(async () => {
  for (const storage of storages.splice(0)) await storage.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function open(): { storage: SqliteStorage; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "tw-checkpoints-"));
  dirs.push(dir);
  const file = join(dir, "textwire.db");
  const storage = openSqliteStorage(file);
  storages.push(storage);
  return { storage, file };
}

/** Frames in the WAL since its last restart, as another connection sees them (a PASSIVE checkpoint's `log`). */
function walFrames(file: string): number {
  const other = new Database(file);
  try {
    return other.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!.log;
  } finally {
    other.close();
  }
}

/** The WAL header's checkpoint sequence number (bytes 12–15, big-endian): it grows by one each time the WAL starts over. */
function walRestarts(file: string): number {
  const header = Buffer.alloc(16);
  const fd = openSync(`${file}-wal`, "r");
  readSync(fd, header, 0, 16, 0);
  closeSync(fd);
  return header.readUInt32BE(12);
}

async function waitFor(what: string, ok: () => boolean, ms = 5_000) {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

describe("WAL checkpoints", () => {
  test("the serving connection does not checkpoint by itself; the checkpointer copies the WAL into the database file", async () => {
    const { storage, file } = open();
    expect(storage.sqlite.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint).toBe(0);
    const before = statSync(file).size;
    for (let n = 0; n < 300; n++) await storage.messages.insert(message(n));
    // Only the checkpointer writes the database file (the commits went to the WAL).
    await waitFor("the database file to grow", () => statSync(file).size > before);
    const other = new Database(file, { readonly: true });
    expect(other.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n).toBe(300);
    other.close();
  });

  test("under steady writes the WAL restarts once it holds 10,000 frames", async () => {
    const { storage, file } = open();
    const restartsBefore = walRestarts(file);
    for (let n = 0; n < 4000; n++) {
      await storage.messages.insert(message(n));
      // Requests arrive as I/O, so the event loop turns between them: here every 20 writes.
      if (n % 20 === 0) await Bun.sleep(0);
    }
    // 4,000 inserts write about 60,000 frames (15 pages each): the WAL started over on the
    // way, and its file is as long as the most it held between restarts.
    expect(walRestarts(file)).toBeGreaterThan(restartsBefore);
    expect(statSync(`${file}-wal`).size / (4096 + 24)).toBeLessThan(45_000);
    expect(walFrames(file)).toBeLessThan(45_000);
  });

  test("closing stops the checkpointer; the database reopens whole", async () => {
    const { storage, file } = open();
    for (let n = 0; n < 100; n++) await storage.messages.insert(message(n));
    storages.splice(storages.indexOf(storage), 1);
    await storage.close();
    const again = openSqliteStorage(file);
    storages.push(again);
    expect((await again.messages.get("m99"))?.body).toBe(message(99).body);
  });
});
