import type { Database } from "bun:sqlite";
import { microClock } from "../../vocabulary/time";
import type { Repositories, Storage } from "../port";
import { startCheckpoints } from "./checkpoints";
import { BUSY_LIMIT_MS, Gate, gated, inTransaction, whileBusy, type Sync, type SyncRepositories } from "./gate";
import { openChecker, openSqlite, probeWrite, takesWrite } from "./open";
import { sqliteRepositories } from "./repositories";

export interface SqliteOptions {
  /** The clock every time comes from, in microseconds since the epoch (default: the wall clock). Tests move it by hand; on SQLite the process clock is the database's. */
  clock?: () => number;
  /** How long a write waits for another process's write lock before it fails busy (default BUSY_LIMIT_MS). */
  busyLimitMs?: number;
}

/** The SQLite storage, with its connection for tests that look at raw rows. */
export interface SqliteStorage extends Storage {
  readonly sqlite: Database;
}

/**
 * The storage on a SQLite file (or `:memory:`), opened, migrated and checked for writes;
 * throws DatabaseError. The unit of work: bun:sqlite is synchronous and has one connection,
 * so `transaction` holds an in-process gate (src/db/sqlite/gate.ts) from BEGIN IMMEDIATE
 * to COMMIT or ROLLBACK, and repository calls outside it wait for the gate only while a
 * transaction holds it. Another process's write lock is waited for between tries, without
 * the gate (whileBusy in gate.ts), so nothing else waits with it.
 */
export function openSqliteStorage(url: string, opts: SqliteOptions = {}): SqliteStorage {
  const sqlite = openSqlite(url);
  const clock = opts.clock ?? microClock;
  const repositories: SyncRepositories = sqliteRepositories(sqlite, clock);
  const gate = new Gate();
  let open = false;
  const isOpen = () => open;
  const each = (wrap: (repository: Sync<object>) => object) =>
    Object.fromEntries(Object.entries(repositories).map(([name, repository]) => [name, wrap(repository)])) as unknown as Repositories;
  const busyLimitMs = opts.busyLimitMs ?? BUSY_LIMIT_MS;
  const outside = each((repository) => gated(repository, gate, busyLimitMs));
  const tx = each((repository) => inTransaction(repository, isOpen));
  const memory = sqlite.filename === ":memory:" || sqlite.filename === "";
  let checker: Database | undefined;
  const checkpoints = memory ? undefined : startCheckpoints(sqlite, gate);

  return {
    dialect: "sqlite",
    sqlite,
    ...outside,

    async transaction(fn) {
      // The gate is kept only once BEGIN IMMEDIATE took the write lock: no one here waits while another process holds it.
      await whileBusy(async () => {
        await gate.take();
        try {
          sqlite.run("BEGIN IMMEDIATE");
        } catch (err) {
          gate.give();
          throw err;
        }
      }, busyLimitMs);
      try {
        open = true;
        const result = await fn(tx);
        sqlite.run("COMMIT");
        return result;
      } catch (err) {
        if (sqlite.inTransaction) sqlite.run("ROLLBACK");
        throw err;
      } finally {
        open = false;
        gate.give();
      }
    },

    async takesWrite() {
      if (!memory) return takesWrite((checker ??= openChecker(sqlite)));
      // An in-memory database exists only on its own connection, free of others' locks.
      try {
        await gate.run(() => probeWrite(sqlite));
        return true;
      } catch {
        return false;
      }
    },

    async close() {
      await checkpoints?.stop();
      await gate.take();
      checker?.close();
      sqlite.close();
    },
  };
}
