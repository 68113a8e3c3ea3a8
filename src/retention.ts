import type { Storage } from "./db/port";
import { PURGED_TABLES, type PurgedTable } from "./db/retention";
import { errorText, type Logger } from "./log";
import type { MediaStore } from "./media/store";

const DAY_MS = 24 * 60 * 60_000;

/** Rows one statement deletes at most: short enough that requests are not held up (docs/performance.md, Retention). */
export const PURGE_BATCH = 500;

/** What a maintenance round purges (docs/operations.md, Retention), in days unless said. */
export interface RetentionSettings {
  EVENTS_RETENTION_DAYS: number;
  GENERATIONS_RETENTION_DAYS: number;
  WORKFLOW_RUNS_RETENTION_DAYS: number;
  /** Unset: messages are kept for good. */
  MESSAGE_RETENTION_DAYS?: number | undefined;
}

/** Tables purged, rows purged: how a purge is counted (the metric of rows purged). */
export type OnPurged = (table: PurgedTable | "messages", rows: number) => void;

export interface RetentionDeps {
  storage: Pick<Storage, "retention">;
  media: MediaStore;
  log: Logger;
  onPurged: OnPurged;
  /** Ends the round between batches (a shutdown). */
  signal?: AbortSignal;
  /** Rows a statement deletes at most (PURGE_BATCH). */
  batch?: number;
}

/** How long each table's rows are kept. Deliveries before events: a delivery purged no longer keeps its event. */
function ages(settings: RetentionSettings, idempotencyTtlMs: number): [PurgedTable, number][] {
  const events = settings.EVENTS_RETENTION_DAYS * DAY_MS;
  const ageOf: Record<PurgedTable, number> = {
    idempotency_keys: idempotencyTtlMs,
    console_sessions: 0,
    workflow_runs: settings.WORKFLOW_RUNS_RETENTION_DAYS * DAY_MS,
    webhook_deliveries: events,
    events,
    status_reports: events,
    generations: settings.GENERATIONS_RETENTION_DAYS * DAY_MS,
  };
  return PURGED_TABLES.map((t) => [t, ageOf[t]]);
}

/** Lets requests in between two batches: a SQLite statement runs on the event loop. */
const yieldToRequests = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Deletes every row past retention, a bounded batch a statement, yielding between batches,
 * until a batch comes back short; each table's count goes to `onPurged`. Returns the counts.
 */
export async function purgePastRetention(deps: RetentionDeps, settings: RetentionSettings, idempotencyTtlMs: number): Promise<Record<string, number>> {
  const batch = deps.batch ?? PURGE_BATCH;
  const purged: Record<string, number> = {};
  const note = (table: PurgedTable | "messages", rows: number) => {
    if (rows === 0) return;
    purged[table] = (purged[table] ?? 0) + rows;
    deps.onPurged(table, rows);
  };
  for (const [table, ageMs] of ages(settings, idempotencyTtlMs)) {
    for (let n = batch; n === batch && !deps.signal?.aborted; ) {
      n = await deps.storage.retention.purge(table, ageMs, batch);
      note(table, n);
      await yieldToRequests();
    }
  }
  if (settings.MESSAGE_RETENTION_DAYS !== undefined) {
    const ageMs = settings.MESSAGE_RETENTION_DAYS * DAY_MS;
    for (let n = batch; n === batch && !deps.signal?.aborted; ) {
      const rows = await deps.storage.retention.oldMessages(ageMs, batch);
      const ids = [...new Set(rows.map((r) => r.id))];
      n = ids.length;
      if (n === 0) break;
      note("messages", await deps.storage.retention.deleteMessages(ids));
      // Files after their rows: a crash in between leaves an unused file, never a row without its file.
      for (const { storeKey } of rows) {
        if (storeKey) await deps.media.delete(storeKey).catch((err) => deps.log.warn("retention: a media file could not be removed", { key: storeKey, error: errorText(err) }));
      }
      await yieldToRequests();
    }
  }
  return purged;
}
