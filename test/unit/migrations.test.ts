// A database made before a migration was added (or before the migrations moved to
// drizzle/sqlite) opens with its rows, gaining only the new migrations: drizzle's journal
// compares each migration's `when`, not its path.
import { Database } from "bun:sqlite";
import { afterEach, expect, setDefaultTimeout, test } from "bun:test";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/node-postgres";
import { migrate as migratePostgres } from "drizzle-orm/node-postgres/migrator";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { openPostgresStorage } from "../../src/db/postgres/storage";
import { openSqliteStorage } from "../../src/db/sqlite/storage";
import { describePostgres } from "../support/postgres";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The migrations of `dialect` as an earlier version shipped them (all but the last), in a temporary folder. */
function earlierMigrations(dialect: "sqlite" | "postgres") {
  const dir = mkdtempSync(join(tmpdir(), "tw-migrations-"));
  dirs.push(dir);
  const earlier = join(dir, "earlier");
  cpSync(resolve(import.meta.dir, "../../drizzle", dialect), earlier, { recursive: true });
  const journalPath = join(earlier, "meta/_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: unknown[] };
  const total = journal.entries.length;
  journal.entries.pop();
  writeFileSync(journalPath, JSON.stringify(journal));
  return { dir, earlier, total };
}

test("a database migrated by an earlier version opens, keeps its rows and gets the later migrations", async () => {
  const { dir, earlier, total } = earlierMigrations("sqlite");
  const file = join(dir, "textwire.db");
  const old = new Database(file, { create: true, strict: true });
  migrate(drizzle({ client: old }), { migrationsFolder: earlier });
  old.run("INSERT INTO messages (id, phone, body, direction, status, timestamp, network, updated_at) VALUES ('m1', '+14155550123', 'old', 'inbound', 'received', 5, 'loopback', 5)");
  old.close();

  const storage = openSqliteStorage(file);
  try {
    // Rows stored before gain the new columns' defaults: no reply, no send time, no media.
    expect(await storage.messages.get("m1")).toMatchObject({ body: "old", replyTo: null, sendAt: null, mediaCount: 0, chatId: null });
    // The message stored before chats is in its contact's direct chat, made by the migration.
    expect(await storage.chats.get("dm_14155550123")).toEqual({
      id: "dm_14155550123", kind: "direct", name: null, participants: ["+14155550123"], network: null, networkId: null, createdAt: 5, lastMessageAt: 5, messages: 1, muted: false, ourTyping: false, lineId: "ln_default", mode: "auto", previousMode: null, humanUntil: null,
    });
    expect(storage.sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: total });
    // The contact its message counted is not opted out, and opting out keeps the count.
    expect(await storage.contacts.get("+14155550123")).toEqual({ phone: "+14155550123", optedOut: false, optedOutAt: null });
    expect((await storage.contacts.setOptedOut("+14155550123", true)).optedOut).toBe(true);
    expect((await storage.messages.insert({ id: "m2", phone: "+14155550123", body: "new", direction: "outbound", status: "queued", network: "loopback", networkId: null })).row.timestamp).toBeGreaterThan(5);
    expect((await storage.messages.history("+14155550123", 10, 0)).total).toBe(2);
    expect(await storage.chats.get("dm_14155550123")).toMatchObject({ messages: 2, lastMessageAt: (await storage.messages.get("m2"))!.timestamp });
    // The triggers still write events, after every earlier one.
    const m3 = (await storage.messages.insert({ id: "m3", phone: "+14155550123", body: "in", direction: "inbound", status: "received", network: "loopback", networkId: null })).row;
    expect((await storage.webhooks.events(0, 10)).rows.at(-1)).toMatchObject({ type: "message.received", timestamp: m3.timestamp, message: { id: "m3", mediaCount: 0 } });
  } finally {
    await storage.close();
  }
});

describePostgres("PostgreSQL migrations", (db) => {
  test("a database migrated by an earlier version opens, keeps its rows and gets the later migrations", async () => {
    const { earlier, total } = earlierMigrations("postgres");
    const old = new pg.Client({ connectionString: db().url });
    await old.connect();
    try {
      await migratePostgres(drizzlePostgres({ client: old }), { migrationsFolder: earlier });
      await old.query(
        `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, updated_at) VALUES ('m1', '+14155550123', 'old', 'inbound', 'received', 5, 'loopback', 5)`,
      );
      await old.query(`INSERT INTO workflows (name, cursor, failures, created_at) VALUES ('w', 0, 0, 1)`);
      await old.query(`INSERT INTO workflow_runs (id, workflow, trigger, dry_run, started_at, status, handled) VALUES ('r1', 'w', 'schedule', false, 1, 'running', 0)`);
    } finally {
      await old.end();
    }

    const storage = await openPostgresStorage(db().url, 2);
    try {
      // Rows stored before gain the new columns' defaults: no reply, no send time, no media.
      expect(await storage.messages.get("m1")).toMatchObject({ body: "old", replyTo: null, sendAt: null, mediaCount: 0, chatId: null });
      // The message stored before chats is in its contact's direct chat, made by the migration.
      expect(await storage.chats.get("dm_14155550123")).toEqual({
        id: "dm_14155550123", kind: "direct", name: null, participants: ["+14155550123"], network: null, networkId: null, createdAt: 5, lastMessageAt: 5, messages: 1, muted: false, ourTyping: false, lineId: "ln_default", mode: "auto", previousMode: null, humanUntil: null,
      });
      expect((await storage.pool.query("SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations")).rows).toEqual([{ n: total }]);
      // The contact its message counted is not opted out, and opting out keeps the count.
      expect(await storage.contacts.get("+14155550123")).toEqual({ phone: "+14155550123", optedOut: false, optedOutAt: null });
      expect((await storage.contacts.setOptedOut("+14155550123", true)).optedOut).toBe(true);
      await storage.messages.insert({ id: "m2", phone: "+14155550123", body: "new", direction: "inbound", status: "received", network: "loopback", networkId: null });
      expect((await storage.messages.history("+14155550123", 10, 0)).total).toBe(2);
      expect(await storage.chats.get("dm_14155550123")).toMatchObject({ messages: 2 });
      // A run that was running before the migration still reports its failure.
      await storage.workflows.endRun("r1", { status: "error", error: "boom", handled: 0 });
      const events = (await storage.webhooks.events(0, 10)).rows;
      // m1's event was written by the earlier version's trigger.
      expect(events.map((e) => e.type)).toEqual(["message.received", "message.received", "workflow.run_failed"]);
      expect(events[1]).toMatchObject({ message: { id: "m2", body: "new", replyTo: null, mediaCount: 0 } });
    } finally {
      await storage.close();
    }
  }, 30_000);
});
