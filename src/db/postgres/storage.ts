import type pg from "pg";
import type { Repositories, Storage } from "../port";
import { postgresApiKeys } from "./api-keys";
import { postgresContacts } from "./contacts";
import { postgresGenerations } from "./generations";
import { postgresIdempotency } from "./idempotency";
import { postgresLeases } from "./leases";
import { postgresMessages } from "./messages";
import { postgresNetworkState } from "./network-state";
import { holdConnection, openPostgres, postgresTakesWrite } from "./open";
import { postgresSessions } from "./sessions";
import type { Run } from "./sql";
import { postgresWebhooks } from "./webhooks";
import { postgresWorkflows } from "./workflows";

export interface PostgresStorage extends Storage {
  readonly pool: pg.Pool;
}

const repositories = (run: Run, batchInserts = false): Repositories => ({
  messages: postgresMessages(run, batchInserts),
  contacts: postgresContacts(run),
  idempotency: postgresIdempotency(run),
  workflows: postgresWorkflows(run),
  leases: postgresLeases(run),
  apiKeys: postgresApiKeys(run),
  sessions: postgresSessions(run),
  generations: postgresGenerations(run),
  networkState: postgresNetworkState(run),
  webhooks: postgresWebhooks(run),
});

/**
 * The storage on PostgreSQL: a pool of `poolSize` connections, migrated and checked for
 * writes; throws DatabaseError. A call outside a transaction is one statement on any pooled
 * connection (autocommit), except message inserts, which are batched (messages.ts). The
 * unit of work holds one connection from BEGIN to COMMIT or ROLLBACK (READ COMMITTED; the
 * rows that decide are locked by the statements that read them) and gives it back on every
 * path, closed when it may be left mid-transaction.
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

    close: () => pool.end(),
  };
}
