import { all, choose, count, declare, run, sql } from "./sql";

/**
 * The tables purged by age, in bounded batches (docs/operations.md, Retention): what "past
 * `ageMs`" means for each is its statement below. Messages go through `oldMessages` and
 * `deleteMessages`, as their media files leave the store too.
 */
export const PURGED_TABLES = ["idempotency_keys", "console_sessions", "workflow_runs", "webhook_deliveries", "events", "status_reports", "generations"] as const;
export type PurgedTable = (typeof PURGED_TABLES)[number];

/** A message past retention and the store key of one of its files (null: it has none). */
export interface OldMessageRow {
  id: string;
  storeKey: string | null;
}

export interface RetentionRepository {
  /** One statement: deletes at most `limit` rows of `table` past `ageMs`; returns how many. */
  purge(table: PurgedTable, ageMs: number, limit: number): Promise<number>;
  /**
   * At most `limit` messages stored more than `ageMs` ago that may go (not waiting to be sent:
   * neither `scheduled` nor `queued`), oldest first, a row for each of their files (one with
   * `storeKey` null when it has none).
   */
  oldMessages(ageMs: number, limit: number): Promise<OldMessageRow[]>;
  /** One statement: deletes these messages, their media rows and reactions with them, unless waiting to be sent; returns how many. */
  deleteMessages(ids: readonly string[]): Promise<number>;
}

// Each deletes a bounded batch, so one statement never holds the write lock for long.
const byTable: Record<PurgedTable, ReturnType<typeof sql>> = {
  idempotency_keys: sql("retention.idempotencyKeys", `DELETE FROM idempotency_keys WHERE (scope, key) IN (
     SELECT scope, key FROM idempotency_keys WHERE created_at < {now_ms} - $ageMs LIMIT $limit)`),
  console_sessions: sql("retention.consoleSessions", `DELETE FROM console_sessions WHERE id_hash IN (
     SELECT id_hash FROM console_sessions WHERE expires_at <= {now_ms} - $ageMs LIMIT $limit)`),
  // A run a `workflow.run_failed` event shows stays as long as the event.
  workflow_runs: sql("retention.workflowRuns", `DELETE FROM workflow_runs WHERE id IN (
     SELECT id FROM workflow_runs WHERE started_at < {now_ms} - $ageMs AND status <> 'running'
       AND NOT EXISTS (SELECT 1 FROM events WHERE run_id = workflow_runs.id) LIMIT $limit)`),
  webhook_deliveries: sql("retention.webhookDeliveries", `DELETE FROM webhook_deliveries WHERE id IN (
     SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < {now_ms} - $ageMs LIMIT $limit)`),
  // An event stays while a delivery still refers to it: a pending one, or a recent entry of the delivery log.
  events: sql("retention.events", `DELETE FROM events WHERE id IN (
     SELECT id FROM events WHERE timestamp < ({now_ms} - $ageMs) * 1000
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id) LIMIT $limit)`),
  status_reports: sql("retention.statusReports", `DELETE FROM status_reports WHERE id IN (
     SELECT id FROM status_reports WHERE received_at < {now_ms} - $ageMs LIMIT $limit)`),
  generations: sql("retention.generations", `DELETE FROM generations WHERE id IN (
     SELECT id FROM generations WHERE created_at < {now_ms} - $ageMs LIMIT $limit)`),
};

/** Messages that may go: not waiting to be sent. */
const MAY_GO = `status NOT IN ('scheduled', 'queued')`;
const oldMessages = sql<OldMessageRow>("retention.oldMessages", `SELECT m.id, md.store_key AS "storeKey"
   FROM (SELECT id, timestamp FROM messages WHERE timestamp < ({now_ms} - $ageMs) * 1000 AND ${MAY_GO} ORDER BY timestamp LIMIT $limit) m
   LEFT JOIN media md ON md.message_id = m.id
   ORDER BY m.timestamp, md.position`);
const deleteMessages = sql("retention.deleteMessages", `DELETE FROM messages WHERE id = ANY($ids::text[]) AND ${MAY_GO}`);

export const retention = declare<RetentionRepository>()({
  purge: run(
    choose(Object.values(byTable), (table: PurgedTable) => byTable[table]),
    (_table: PurgedTable, ageMs: number, limit: number) => ({ ageMs, limit }),
    count,
  ),
  oldMessages: all(oldMessages, (ageMs, limit) => ({ ageMs, limit })),
  deleteMessages: run(deleteMessages, (ids) => ({ ids }), count),
});
