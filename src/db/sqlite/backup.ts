import { Database } from "bun:sqlite";
import { existsSync, renameSync, rmSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { createPrivateFileSync } from "../../private-files";
import { DatabaseError } from "../errors";

/** What a backup wrote, read back from the copy. */
export interface BackupSummary {
  path: string;
  bytes: number;
  messages: number;
}

/** How long the backup's own connection waits for a lock (the server never waits inside SQLite; this CLI may). */
const BACKUP_BUSY_MS = 10_000;

/**
 * Copies the SQLite database at `source` to `target` while servers use it: `VACUUM INTO` from a
 * connection of its own is one read transaction, so the copy is the database as of one commit,
 * and under WAL it holds up no writer. The copy is written beside `target` and renamed over it
 * (`force`: an existing file is replaced; else refused), then checked with `PRAGMA integrity_check`.
 * Throws DatabaseError with a line for the operator.
 */
export function backupSqlite(source: string, target: string, opts: { force: boolean }): BackupSummary {
  if (source === ":memory:" || source === "") throw new DatabaseError("DATABASE_URL is :memory:; there is no file to back up");
  const from = resolve(source);
  const to = resolve(target);
  if (!existsSync(from)) throw new DatabaseError(`no database at DATABASE_URL=${JSON.stringify(source)}`);
  if (from === to) throw new DatabaseError("FILE is the database itself; give another path");
  if (existsSync(to) && !opts.force) throw new DatabaseError(`${target} exists; give --force to replace it`);
  if (!existsSync(dirname(to))) throw new DatabaseError(`the folder of ${target} does not exist`);
  const partial = join(dirname(to), `.${basename(to)}.${process.pid}.partial`);
  rmSync(partial, { force: true });
  try {
    // VACUUM INTO fills an empty file and keeps its mode: the copy is 0600 like the database.
    createPrivateFileSync(partial);
    const db = new Database(from, { strict: true });
    try {
      db.run(`PRAGMA busy_timeout = ${BACKUP_BUSY_MS}`);
      db.prepare("VACUUM INTO $file").run({ file: partial });
    } finally {
      db.close();
    }
    const checked = check(partial);
    renameSync(partial, to);
    return { path: to, bytes: statSync(to).size, messages: checked.messages };
  } catch (err) {
    rmSync(partial, { force: true });
    if (err instanceof DatabaseError) throw err;
    throw new DatabaseError(`backup failed: ${(err instanceof Error ? err.message : String(err)).split("\n")[0]}`);
  }
}

/** Opens the copy read-only and runs PRAGMA integrity_check; throws unless it says ok. */
function check(file: string): { messages: number } {
  const copy = new Database(file, { readonly: true, strict: true });
  try {
    const problems = copy.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all().map((r) => r.integrity_check);
    if (problems.join() !== "ok") throw new DatabaseError(`the copy failed PRAGMA integrity_check: ${problems.slice(0, 3).join("; ")}`);
    return { messages: copy.query<{ n: number }, []>("SELECT count(*) AS n FROM messages").get()!.n };
  } finally {
    copy.close();
  }
}
