/**
 * The select lists of the events and webhooks tables under the port's names, and their
 * mapping to the port's rows, shared by src/db/sqlite/webhooks.ts and
 * src/db/postgres/webhooks.ts (both dialects take the same SQL here; booleans and the
 * endpoint's `events` list are stored differently, so the mapping reads either form).
 */
import type { EventType } from "../vocabulary/events";
import type { MessageStatus } from "../vocabulary/message-status";
import type { MessageDirection } from "../vocabulary/messages";
import type { RunStatus, RunTrigger } from "../vocabulary/workflows";
import type { ClaimedDelivery, DeliveryRow, EventRow, WebhookEndpointRow } from "./port";

/** What an event `ev` reports, joined to it: its message `m` or its run `r`. */
export const EVENT_JOINS = `LEFT JOIN messages m ON m.id = ev.message_id LEFT JOIN workflow_runs r ON r.id = ev.run_id`;

/** An event with its message (as it was at the event: status and error from the event) or its run. */
export const EVENT_COLUMNS = `ev.id AS "eventId", ev.type AS "eventType", ev.timestamp AS "eventTimestamp", ev.previous_status AS "previousStatus",
  ev.message_id AS "messageId", m.phone AS "messagePhone", m.body AS "messageBody", m.direction AS "messageDirection",
  ev.status AS "messageStatus", m.timestamp AS "messageTimestamp", ev.error AS "messageError",
  m.reply_to AS "messageReplyTo", m.send_at AS "messageSendAt", m.media_count AS "messageMediaCount",
  ev.run_id AS "runId", r.workflow AS "runWorkflow", r.trigger AS "runTrigger", r.dry_run AS "runDryRun", r.started_at AS "runStartedAt",
  r.ended_at AS "runEndedAt", r.status AS "runStatus", r.error AS "runError", r.handled AS "runHandled"`;

/** A delivery `d` with its event `ev`'s type. */
export const DELIVERY_COLUMNS = `d.id, d.endpoint_id AS "endpointId", d.event_id AS "eventId", ev.type AS "eventType", d.state, d.attempts,
  d.last_status AS "lastStatus", d.last_error AS "lastError", d.last_attempt_at AS "lastAttemptAt", d.next_attempt_at AS "nextAttemptAt",
  d.created_at AS "createdAt"`;

const ENDPOINT_FIELDS = {
  id: "id",
  url: "url",
  events: "events",
  description: "description",
  enabled: "enabled",
  disabledReason: "disabled_reason",
  secret: "secret",
  previousSecret: "previous_secret",
  previousSecretUntil: "previous_secret_until",
  failingSince: "failing_since",
  createdAt: "created_at",
  updatedAt: "updated_at",
} as const satisfies Record<keyof WebhookEndpointRow, string>;

/** An endpoint's columns, of the table or alias `from` (none: the table itself), named `prefix` + the port's name. */
export function endpointColumns(from?: string, prefix = ""): string {
  return Object.entries(ENDPOINT_FIELDS)
    .map(([name, column]) => `${from ? `${from}.` : ""}${column} AS "${prefix}${name}"`)
    .join(", ");
}

type Stored = Record<string, unknown>;

export function toEndpointRow(row: Stored, prefix = ""): WebhookEndpointRow {
  const get = (name: keyof WebhookEndpointRow) => row[prefix + name];
  const events = get("events");
  return {
    id: get("id") as string,
    url: get("url") as string,
    // SQLite keeps a JSON array, PostgreSQL a text[].
    events: events === null ? null : typeof events === "string" ? (JSON.parse(events) as EventType[]) : (events as EventType[]),
    description: get("description") as string | null,
    enabled: Boolean(get("enabled")),
    disabledReason: get("disabledReason") as WebhookEndpointRow["disabledReason"],
    secret: get("secret") as string,
    previousSecret: get("previousSecret") as string | null,
    previousSecretUntil: get("previousSecretUntil") as number | null,
    failingSince: get("failingSince") as number | null,
    createdAt: get("createdAt") as number,
    updatedAt: get("updatedAt") as number,
  };
}

export function toEventRow(row: Stored): EventRow {
  const id = row.eventId as string;
  const timestamp = row.eventTimestamp as number;
  const type = row.eventType as EventType;
  if (type === "workflow.run_failed") {
    return {
      id,
      type,
      timestamp,
      run: {
        id: row.runId as string,
        workflow: row.runWorkflow as string,
        trigger: row.runTrigger as RunTrigger,
        dryRun: Boolean(row.runDryRun),
        startedAt: row.runStartedAt as number,
        endedAt: row.runEndedAt as number | null,
        status: row.runStatus as RunStatus,
        error: row.runError as string | null,
        handled: row.runHandled as number,
      },
    };
  }
  return {
    id,
    type,
    timestamp,
    message: {
      id: row.messageId as string,
      phone: row.messagePhone as string,
      body: row.messageBody as string,
      direction: row.messageDirection as MessageDirection,
      status: row.messageStatus as MessageStatus,
      timestamp: row.messageTimestamp as number,
      error: row.messageError as string | null,
      replyTo: (row.messageReplyTo ?? null) as string | null,
      sendAt: (row.messageSendAt ?? null) as number | null,
      mediaCount: (row.messageMediaCount ?? 0) as number,
    },
    previousStatus: row.previousStatus as MessageStatus | null,
  };
}

export function toDeliveryRow(row: Stored): DeliveryRow {
  return {
    id: row.id as string,
    endpointId: row.endpointId as string,
    eventId: row.eventId as string,
    eventType: row.eventType as EventType,
    state: row.state as DeliveryRow["state"],
    attempts: row.attempts as number,
    lastStatus: row.lastStatus as number | null,
    lastError: row.lastError as string | null,
    lastAttemptAt: row.lastAttemptAt as number | null,
    nextAttemptAt: row.nextAttemptAt as number | null,
    createdAt: row.createdAt as number,
  };
}

/** The endpoint's columns' prefix in a claimed row (the delivery's and the event's own names do not clash). */
export const CLAIMED_ENDPOINT = "endpoint_";

/** A claimed delivery: DELIVERY_COLUMNS, endpointColumns("e", CLAIMED_ENDPOINT) and EVENT_COLUMNS of one row. */
export function toClaimedDelivery(row: Stored): ClaimedDelivery {
  return { delivery: toDeliveryRow(row), endpoint: toEndpointRow(row, CLAIMED_ENDPOINT), event: toEventRow(row) };
}
