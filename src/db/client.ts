import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import * as schema from "./schema";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

const MIGRATIONS = resolve(import.meta.dir, "../../drizzle");

/**
 * Opens the database (creating its folder), sets the pragmas every connection needs and
 * applies pending migrations. Several processes may open the same file (server and CLI).
 */
export function openDb(url: string): Db {
  if (url !== ":memory:") mkdirSync(dirname(resolve(url)), { recursive: true });
  const sqlite = new Database(url, { create: true, strict: true });
  // WAL lets readers run beside the single writer; NORMAL sync is durable across process
  // crashes (only an OS crash can lose the last commits); busy_timeout waits for the
  // other process's write lock instead of failing.
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("PRAGMA synchronous = NORMAL");
  sqlite.run("PRAGMA busy_timeout = 5000");
  sqlite.run("PRAGMA foreign_keys = ON");
  const db = drizzle({ client: sqlite, schema }) as Db;
  migrate(db, { migrationsFolder: MIGRATIONS });
  return db;
}
