import type { EventRow, MediaRow, MessageRepository, WorkflowRunRow } from "../db/port";
import { toRecord } from "../messages/records";
import { isoTime } from "../messages/time";

/** A workflow run as an event's `data` shows it. */
export function toRunRecord(run: WorkflowRunRow) {
  return {
    id: run.id,
    workflow: run.workflow,
    trigger: run.trigger,
    dry_run: run.dryRun,
    status: run.status,
    error: run.error,
    handled: run.handled,
    started_at: isoTime(run.startedAt * 1000),
    ended_at: run.endedAt === null ? null : isoTime(run.endedAt * 1000),
  };
}

/**
 * An event as GET /api/events lists it, with its message's media rows (see toEvents). A
 * delivery's body is the same without `id` (src/webhooks/deliverer.ts).
 */
export function toEvent(row: EventRow, media: readonly MediaRow[] = []) {
  const data =
    row.type === "workflow.run_failed"
      ? toRunRecord(row.run)
      : row.type === "message.status_updated"
        ? { ...toRecord(row.message, media), previous_status: row.previousStatus }
        : toRecord(row.message, media);
  return { id: row.id, type: row.type, timestamp: isoTime(row.timestamp), data };
}

export type EventRecord = ReturnType<typeof toEvent>;

/** Events with their messages' media (a message's files never change), read in one query and only when one has some. */
export async function toEvents(messages: MessageRepository, rows: readonly EventRow[]): Promise<EventRecord[]> {
  const withMedia = rows.flatMap((row) => (row.type !== "workflow.run_failed" && row.message.mediaCount > 0 ? [row.message.id] : []));
  const media = withMedia.length > 0 ? await messages.mediaOf(withMedia) : undefined;
  return rows.map((row) => toEvent(row, row.type === "workflow.run_failed" ? [] : media?.get(row.message.id)));
}
