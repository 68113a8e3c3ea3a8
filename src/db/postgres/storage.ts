import type pg from "pg";
import type { Storage } from "../port";
import { holdConnection, openPostgres, postgresTakesWrite } from "./open";
import { postgresRepositories as repositories } from "./repositories";

export interface PostgresStorage extends Storage {
  readonly pool: pg.Pool;
}

/**
 * The storage on PostgreSQL: a pool of `poolSize` connections, migrated and checked for
 * writes; throws DatabaseError. A call outside a transaction is one statement on any pooled
 * connection (autocommit), except message inserts and status moves, which are batched
 * (messages.ts). The unit of work holds one connection from BEGIN to COMMIT or ROLLBACK
 * (READ COMMITTED; the rows that decide are locked by the statements that read them) and
 * gives it back on every path, closed when it may be left mid-transaction.
 */
export async function openPostgresStorage(url: string, poolSize: number): Promise<PostgresStorage> {
  const pool = await openPostgres(url, poolSize);
  const outside = repositories((statement, values) => pool.query({ name: statement.name, text: statement.text, values }), true);

  return {
    dialect: "postgres",
    pool,
    ...outside,

    async transaction(fn) {
      const { client, release } = await holdConnection(pool);
      let open = true;
      const tx = repositories((statement, values) => {
        if (!open) return Promise.reject(new Error(`${statement.name}: a transaction's repositories were used after it ended`));
        return client.query({ name: statement.name, text: statement.text, values });
      });
      let failed: Error | undefined;
      try {
        await client.query("BEGIN ISOLATION LEVEL READ COMMITTED");
        const result = await fn(tx);
        open = false;
        await client.query("COMMIT");
        return result;
      } catch (err) {
        open = false;
        await client.query("ROLLBACK").catch((rollbackFailed: Error) => (failed = rollbackFailed));
        throw err;
      } finally {
        release(failed);
      }
    },

    takesWrite: () => postgresTakesWrite(pool),

    connections: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),

    close: () => pool.end(),
  };
}
