// A database made before a migration was added (or before the migrations moved to
// drizzle/sqlite) opens with its rows, gaining only the new migrations: drizzle's journal
// compares each migration's `when`, not its path.
import { Database } from "bun:sqlite";
import { afterEach, expect, test } from "bun:test";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { openSqliteStorage } from "../../src/db/sqlite/storage";

const MIGRATIONS = resolve(import.meta.dir, "../../drizzle/sqlite");
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

test("a database migrated by an earlier version opens, keeps its rows and gets the later migrations", async () => {
  const dir = mkdtempSync(join(tmpdir(), "tw-migrations-"));
  dirs.push(dir);
  // The migrations as an earlier version shipped them: all but the last.
  const earlier = join(dir, "earlier");
  cpSync(MIGRATIONS, earlier, { recursive: true });
  const journalPath = join(earlier, "meta/_journal.json");
  const journal = JSON.parse(readFileSync(journalPath, "utf8")) as { entries: unknown[] };
  const total = journal.entries.length;
  journal.entries.pop();
  writeFileSync(journalPath, JSON.stringify(journal));
  const file = join(dir, "textwire.db");
  const old = new Database(file, { create: true, strict: true });
  migrate(drizzle({ client: old }), { migrationsFolder: earlier });
  old.run("INSERT INTO messages (id, phone, body, direction, status, timestamp, network, updated_at) VALUES ('m1', '+14155550123', 'old', 'inbound', 'received', 5, 'loopback', 5)");
  old.close();

  const storage = openSqliteStorage(file);
  try {
    expect((await storage.messages.get("m1"))?.body).toBe("old");
    expect(storage.sqlite.query("SELECT count(*) AS n FROM __drizzle_migrations").get()).toEqual({ n: total });
    expect((await storage.messages.insert({ id: "m2", phone: "+14155550123", body: "new", direction: "outbound", status: "queued", network: "loopback", networkId: null })).row.timestamp).toBeGreaterThan(5);
    expect((await storage.messages.history("+14155550123", 10, 0)).total).toBe(2);
  } finally {
    await storage.close();
  }
});
