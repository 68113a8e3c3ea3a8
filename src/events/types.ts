import type { EventRow, MediaRow, MessageRepository, ReactionRow, WorkflowRunRow } from "../db/port";
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
 * An event as GET /api/events lists it, with its message's media and reaction rows (see
 * toEvents): a message event's data is the record and what the event carries besides
 * (`previous_status`, `reaction`, `previous_message`). A delivery's body is the same without
 * `id` (src/webhooks/deliverer.ts).
 */
export function toEvent(row: EventRow, media: readonly MediaRow[] = [], reactions: readonly ReactionRow[] = []) {
  const data =
    row.type === "workflow.run_failed"
      ? toRunRecord(row.run)
      : !("message" in row)
        ? row.data
        : row.type === "message.status_updated"
          ? { ...toRecord(row.message, media, reactions), previous_status: row.previousStatus }
          : { ...toRecord(row.message, media, reactions), ...row.data };
  return { id: row.id, type: row.type, timestamp: isoTime(row.timestamp), data };
}

export type EventRecord = ReturnType<typeof toEvent>;

/**
 * Events with their messages' media (a message's files never change) and reactions (as they
 * stand now), each read in one query and only when one has some.
 */
export async function toEvents(messages: Pick<MessageRepository, "mediaOf" | "reactionsOf">, rows: readonly EventRow[]): Promise<EventRecord[]> {
  const about = rows.flatMap((row) => ("message" in row ? [row.message] : []));
  const withMedia = about.filter((m) => m.mediaCount > 0).map((m) => m.id);
  const withReactions = about.filter((m) => m.reactionCount > 0).map((m) => m.id);
  const [media, reactions] = await Promise.all([
    withMedia.length > 0 ? messages.mediaOf(withMedia) : undefined,
    withReactions.length > 0 ? messages.reactionsOf(withReactions) : undefined,
  ]);
  return rows.map((row) => ("message" in row ? toEvent(row, media?.get(row.message.id), reactions?.get(row.message.id)) : toEvent(row)));
}
