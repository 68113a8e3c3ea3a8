import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import { createPrivateFileSync, makePrivateDirSync } from "../../private-files";
import { dirname, resolve } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { migrate } from "drizzle-orm/bun-sqlite/migrator";
import { DatabaseError } from "../errors";
import { WRITE_CHECK_MS } from "../port";
import { BUSY_LIMIT_MS, whileBusy } from "./gate";
import * as schema from "./schema";

const MIGRATIONS = resolve(import.meta.dir, "../../../drizzle/sqlite");

/**
 * Applies pending migrations. drizzle's migrator reads which are applied outside its
 * transaction, so two processes starting on a new file can both try them: the loser's
 * retry finds them applied and does nothing.
 */
function migrateShared(sqlite: Database) {
  const db = drizzle({ client: sqlite, schema });
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

/** Why a database cannot be opened or written, in one line for an operator. */
function causeOf(url: string, err: unknown): string {
  const code = (err as { code?: string }).code;
  if (url !== ":memory:" && existsSync(url) && statSync(url).isDirectory()) return "the path is a directory, not a file";
  switch (code) {
    case "ENOTDIR":
    case "EEXIST":
      return "a part of the path is a file, not a folder";
    case "EACCES":
    case "EPERM":
    case "EROFS":
      return "its folder cannot be created (no permission or a read-only file system)";
    case "SQLITE_NOTADB":
      return "the file is not a SQLite database";
    case "SQLITE_READONLY":
    case "SQLITE_READONLY_DIRECTORY":
      return "the database is read-only (the file, its folder or the file system does not take writes)";
    case "SQLITE_CANTOPEN":
      return "the file cannot be opened or created (check the path and its folder)";
    case "SQLITE_BUSY":
      return "the database is locked by another process";
  }
  return (err instanceof Error ? err.message : String(err)).split("\n")[0]!;
}

/** One write, rolled back: fails when the database does not take writes (read-only, locked). */
export function probeWrite(sqlite: Database) {
  sqlite.run("BEGIN IMMEDIATE");
  try {
    sqlite.run("INSERT OR REPLACE INTO network_state (network, key, value) VALUES ('textwire', 'write-check', '')");
  } finally {
    sqlite.run("ROLLBACK");
  }
}

/**
 * Opens the database file (creating its folder), sets the pragmas every connection needs,
 * applies pending migrations and checks that it takes a write. Several processes may open
 * the same file (server and CLI). Throws DatabaseError when it cannot be used.
 */
export function openSqlite(url: string): Database {
  try {
    if (url !== ":memory:") {
      makePrivateDirSync(dirname(resolve(url)));
      createPrivateFileSync(resolve(url));
    }
    const sqlite = new Database(url, { create: true, strict: true });
    // busy_timeout first: start-up (nothing is served yet) waits for another process's write
    // lock instead of failing. WAL lets readers run beside the single writer; NORMAL sync is
    // durable across process crashes (only an OS crash can lose the last commits).
    sqlite.run(`PRAGMA busy_timeout = ${BUSY_LIMIT_MS}`);
    sqlite.run("PRAGMA journal_mode = WAL");
    sqlite.run("PRAGMA synchronous = NORMAL");
    sqlite.run("PRAGMA foreign_keys = ON");
    migrateShared(sqlite);
    probeWrite(sqlite);
    // Serving, SQLite never waits on the event loop: the storage retries between sleeps (whileBusy, gate.ts).
    sqlite.run("PRAGMA busy_timeout = 0");
    return sqlite;
  } catch (err) {
    throw new DatabaseError(`cannot use the database at DATABASE_URL=${JSON.stringify(url)}: ${causeOf(url, err)}`);
  }
}

/**
 * Whether the database takes a write now, within 1.8 s, without blocking the process:
 * `checker` is a second connection that never waits inside SQLite (busy_timeout 0),
 * retried between sleeps while another process holds the write lock.
 */
export async function takesWrite(checker: Database): Promise<boolean> {
  try {
    await whileBusy(() => probeWrite(checker), WRITE_CHECK_MS);
    return true;
  } catch {
    return false;
  }
}

/** The connection `takesWrite` uses beside `sqlite` (same file). */
export function openChecker(sqlite: Database): Database {
  const checker = new Database(sqlite.filename, { strict: true });
  checker.run("PRAGMA busy_timeout = 0");
  return checker;
}
