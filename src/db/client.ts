import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import * as schema from "./schema";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

const MIGRATIONS = resolve(import.meta.dir, "../../drizzle");

/**
 * Applies pending migrations. drizzle's migrator reads which are applied outside its
 * transaction, so two processes starting on a new file can both try them: the loser's
 * retry finds them applied and does nothing.
 */
function migrateShared(db: Db) {
  for (let attempt = 1; ; attempt++) {
    try {
      migrate(db, { migrationsFolder: MIGRATIONS });
      return;
    } catch (err) {
      if (attempt >= 5) throw err;
      Bun.sleepSync(50 * attempt);
    }
  }
}

/**
 * Opens the database (creating its folder), sets the pragmas every connection needs and
 * applies pending migrations. Several processes may open the same file (server and CLI).
 */
export function openDb(url: string): Db {
  if (url !== ":memory:") mkdirSync(dirname(resolve(url)), { recursive: true });
  const sqlite = new Database(url, { create: true, strict: true });
  // busy_timeout first: every later statement waits for another process's write lock
  // instead of failing. WAL lets readers run beside the single writer; NORMAL sync is
  // durable across process crashes (only an OS crash can lose the last commits).
  sqlite.run("PRAGMA busy_timeout = 5000");
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("PRAGMA synchronous = NORMAL");
  sqlite.run("PRAGMA foreign_keys = ON");
  const db = drizzle({ client: sqlite, schema }) as Db;
  migrateShared(db);
  return db;
}
