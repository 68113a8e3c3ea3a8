import { isDataEvent, type DataEventType, type EventType } from "../vocabulary/events";
import type { MessageStatus } from "../vocabulary/message-status";
import type { DeliveryState, EndpointDisabledReason } from "../vocabulary/webhooks";
import { queueSize, type QueueSize, type RecordRow } from "./messages";
import { all, changed, choose, count, declare, get, page, run, sql } from "./sql";
import type { WorkflowRunRow } from "./workflows";

/** The events about a message; `contact.typing` is about a contact, `workflow.run_failed` about a run. */
export type MessageEventType = Exclude<EventType, "workflow.run_failed" | "contact.typing" | DataEventType>;

/**
 * An event as stored, written in the transaction of the change it reports: by the
 * migrations' triggers (an inbound message, an applied status move, a real run that failed)
 * or by `events.append` (the others). A trigger on `events` queues a delivery for every
 * enabled endpoint subscribed to its type.
 */
export type EventRow =
  | {
      id: string;
      type: MessageEventType;
      /** µs; unique and strictly increasing in commit order (the poll cursor rule). */
      timestamp: number;
      /** The message at the event: status and error as the change left them, the rest as it is now. */
      message: RecordRow;
      /** Status events: the status before the change; null otherwise. */
      previousStatus: MessageStatus | null;
      /** What the event carries besides the message (`{ reaction }`, `{ previous_message }`); null when nothing. */
      data: Record<string, unknown> | null;
    }
  | {
      id: string;
      type: "contact.typing";
      timestamp: number;
      data: { phone: string; typing: boolean };
    }
  | {
      id: string;
      type: DataEventType;
      timestamp: number;
      /** The chat as the change left it; an admin action's record and `actor_key_id`. */
      data: Record<string, unknown>;
    }
  | {
      id: string;
      type: "workflow.run_failed";
      timestamp: number;
      run: WorkflowRunRow;
    };

/** The events no trigger writes: the domain appends them in the transaction of their change. */
export interface EventRepository {
  /** Stores an event with the next event timestamp (as the triggers take it), the message's status and error as they are now (`messageId`), and `data` as JSON. */
  append(type: Exclude<EventType, "message.received" | "message.status_updated" | "workflow.run_failed">, about: { messageId?: string; data?: object }): Promise<void>;
}

/** Stored by `append` (each dialect's statement takes the event clock its way). */
export const appendParams = (type: EventType, about: { messageId?: string; data?: object }) => ({
  type,
  messageId: about.messageId ?? null,
  data: about.data === undefined ? null : JSON.stringify(about.data),
});

export interface WebhookEndpointRow {
  /** `we_…` */
  id: string;
  url: string;
  /** Null: every event type. */
  events: EventType[] | null;
  description: string | null;
  enabled: boolean;
  /** Why Textwire disabled it (`gone`: the endpoint answered 410; `failing`: 5 days of failures); null when enabled or disabled by a client. */
  disabledReason: EndpointDisabledReason | null;
  /** `whsec_…` */
  secret: string;
  /** The secret before the last rotation, still signed with until `previousSecretUntil`. */
  previousSecret: string | null;
  previousSecretUntil: number | null;
  /** The first failed attempt since the last success; null when the last attempt succeeded or none was made. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
}

/** One event's delivery to one endpoint, with its attempts so far. */
export interface DeliveryRow {
  /** `dlv_…` */
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  state: DeliveryState;
  /** Attempts made in the current series (a replay or a manual retry starts a new series). */
  attempts: number;
  /** HTTP status of the last attempt; null when it got no answer or none was made. */
  lastStatus: number | null;
  /** What went wrong on the last attempt (timeout, connection refused, blocked address, `HTTP 500`…). */
  lastError: string | null;
  lastAttemptAt: number | null;
  /** Null once succeeded or failed. */
  nextAttemptAt: number | null;
  createdAt: number;
}

/** A delivery leased to one process for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  delivery: DeliveryRow;
  endpoint: WebhookEndpointRow;
  event: EventRow;
}

/** How an attempt ended, as the domain decided (src/webhooks/deliverer.ts). */
export interface AttemptOutcome {
  state: DeliveryState;
  status: number | null;
  error: string | null;
  /** `pending` only: the next attempt is due this long from now. */
  retryInMs?: number;
}

export interface WebhookRepository {
  /** Stores an endpoint created now, enabled. */
  createEndpoint(endpoint: Pick<WebhookEndpointRow, "id" | "url" | "events" | "description" | "secret">): Promise<WebhookEndpointRow>;
  /** Oldest first. */
  listEndpoints(): Promise<WebhookEndpointRow[]>;
  getEndpoint(id: string): Promise<WebhookEndpointRow | undefined>;
  /**
   * Changes what is given. `enabled: true` also clears `disabledReason` and `failingSince`;
   * `enabled: false` sets `disabledReason` to null (a client's choice). Undefined when there is no such endpoint.
   */
  updateEndpoint(id: string, patch: Partial<Pick<WebhookEndpointRow, "url" | "events" | "description" | "enabled">>): Promise<WebhookEndpointRow | undefined>;
  /** Deletes the endpoint and its deliveries; false when there is none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /** New secret; the current one becomes `previousSecret` until `keepPreviousMs` from now. */
  rotateSecret(id: string, secret: string, keepPreviousMs: number): Promise<WebhookEndpointRow | undefined>;
  /** One statement: replaces an endpoint's stored secrets (sealing, rotation of the key) unless its secret changed since `was`. False then. */
  setSecrets(id: string, was: string, secret: string, previousSecret: string | null): Promise<boolean>;
  /** Events with `timestamp > since`, oldest first, at most `limit`, of `type` when given; `hasMore` when more follow. */
  events(since: number, limit: number, type?: EventType): Promise<{ rows: EventRow[]; hasMore: boolean }>;
  /** An endpoint's deliveries, newest first (by creation), of `state` when given. */
  deliveries(endpointId: string, limit: number, state?: DeliveryState): Promise<DeliveryRow[]>;
  /**
   * One statement per delivery, safe across processes (PostgreSQL: FOR UPDATE SKIP LOCKED):
   * leases to `owner` for `leaseMs` up to `limit` deliveries that are pending, due and not
   * leased (or whose lease expired), of enabled endpoints not in `skipEndpoints`, at most
   * `perEndpoint` of any one endpoint, earliest due first; with their endpoint and event.
   */
  claimDue(owner: string, leaseMs: number, limit: number, perEndpoint: number, skipEndpoints: readonly string[]): Promise<ClaimedDelivery[]>;
  /**
   * One statement: records an attempt's outcome on a delivery `owner` still leases
   * (attempts + 1, last status, error and attempt time, the new state, the next attempt
   * from `retryInMs`, the lease let go). False when the lease was lost: nothing changes.
   */
  recordAttempt(deliveryId: string, owner: string, outcome: AttemptOutcome): Promise<boolean>;
  /** One statement: the endpoint's last attempt succeeded: `failingSince` cleared. */
  markSucceeding(endpointId: string): Promise<void>;
  /**
   * One statement: the endpoint's last attempt failed: `failingSince` set to now unless set.
   * When it was set more than `disableAfterMs` ago, the endpoint is disabled (`failing`); true then.
   */
  markFailing(endpointId: string, disableAfterMs: number): Promise<boolean>;
  /** One statement: disables the endpoint with that reason. */
  disableEndpoint(endpointId: string, reason: EndpointDisabledReason): Promise<void>;
  /**
   * Queues again, for this endpoint, every event with `timestamp > since` of the types it
   * subscribes to: each delivery (new or existing) pending, due now, a new series, unleased. Returns how many.
   */
  replay(endpointId: string, since: number): Promise<number>;
  /** One delivery of that endpoint pending, due now, a new series; undefined when there is none. */
  retryNow(endpointId: string, deliveryId: string): Promise<DeliveryRow | undefined>;
  /** How many deliveries are pending, and how long the longest-due one of an enabled endpoint is overdue (metrics). */
  deliveryQueue(): Promise<QueueSize>;
}

/** What an event `ev` reports, joined to it: its message `m` or its run `r`. */
const EVENT_JOINS = `LEFT JOIN messages m ON m.id = ev.message_id LEFT JOIN workflow_runs r ON r.id = ev.run_id`;

/** An event with its message (as it was at the event: status and error from the event) or its run. */
const EVENT_COLUMNS = `ev.id AS "eventId", ev.type AS "eventType", ev.timestamp AS "eventTimestamp", ev.previous_status AS "previousStatus",
  ev.message_id AS "messageId", m.phone AS "messagePhone", m.body AS "messageBody", m.direction AS "messageDirection",
  ev.status AS "messageStatus", m.timestamp AS "messageTimestamp", ev.error AS "messageError",
  m.reply_to AS "messageReplyTo", m.send_at AS "messageSendAt", m.media_count AS "messageMediaCount", m.reaction_count AS "messageReactionCount",
  m.read_at AS "messageReadAt", m.edited_at AS "messageEditedAt", m.unsent_at AS "messageUnsentAt", m.chat_id AS "messageChatId", m.line_id AS "messageLineId", ev.data AS "data",
  ev.run_id AS "runId", r.workflow AS "runWorkflow", r.trigger AS "runTrigger", r.dry_run AS "runDryRun", r.started_at AS "runStartedAt",
  r.ended_at AS "runEndedAt", r.status AS "runStatus", r.error AS "runError", r.handled AS "runHandled"`;

/** A delivery `d` with its event `ev`'s type. */
export const DELIVERY_COLUMNS = `d.id, d.endpoint_id AS "endpointId", d.event_id AS "eventId", ev.type AS "eventType", d.state, d.attempts,
  d.last_status AS "lastStatus", d.last_error AS "lastError", d.last_attempt_at AS "lastAttemptAt", d.next_attempt_at AS "nextAttemptAt",
  d.created_at AS "createdAt"`;

/** An endpoint's columns, of alias `e` when given, each named `prefix` + the port's name. */
const endpointColumns = (e = "", p = "") =>
  `${e}id AS "${p}id", ${e}url AS "${p}url", ${e}events AS "${p}events", ${e}description AS "${p}description", ${e}enabled AS "${p}enabled",
   ${e}disabled_reason AS "${p}disabledReason", ${e}secret AS "${p}secret", ${e}previous_secret AS "${p}previousSecret",
   ${e}previous_secret_until AS "${p}previousSecretUntil", ${e}failing_since AS "${p}failingSince", ${e}created_at AS "${p}createdAt",
   ${e}updated_at AS "${p}updatedAt"`;

type Stored = Record<string, unknown>;

/** The columns named `prefix` + a field, under the field's name (`messagePhone`: `phone`, `endpoint_url`: `url`). */
function fields(row: Stored, prefix: string): Stored {
  const found = Object.entries(row).filter(([k]) => k.startsWith(prefix) && k.length > prefix.length);
  return Object.fromEntries(found.map(([k, v]) => [k[prefix.length]!.toLowerCase() + k.slice(prefix.length + 1), v]));
}

function toEndpointRow(row: Stored, prefix = ""): WebhookEndpointRow {
  const e = prefix ? fields(row, prefix) : row;
  // SQLite keeps a JSON array, PostgreSQL a text[].
  return { ...e, events: typeof e.events === "string" ? JSON.parse(e.events) : e.events, enabled: Boolean(e.enabled) } as WebhookEndpointRow;
}

/** An event read with EVENT_COLUMNS: its message's columns are named `message…`, its run's `run…`. */
function toEventRow(row: Stored): EventRow {
  const event = { id: row.eventId, type: row.eventType, timestamp: row.eventTimestamp };
  if (row.eventType === "workflow.run_failed") {
    const run = fields(row, "run");
    return { ...event, run: { ...run, dryRun: Boolean(run.dryRun) } } as EventRow;
  }
  const data = typeof row.data === "string" ? JSON.parse(row.data) : null;
  if (row.eventType === "contact.typing" || isDataEvent(String(row.eventType))) return { ...event, data } as EventRow;
  const message = fields(row, "message");
  return { ...event, message: { ...message, mediaCount: message.mediaCount ?? 0, reactionCount: message.reactionCount ?? 0 }, previousStatus: row.previousStatus, data } as EventRow;
}

const DELIVERY_FIELDS = ["id", "endpointId", "eventId", "eventType", "state", "attempts", "lastStatus", "lastError", "lastAttemptAt", "nextAttemptAt", "createdAt"];

/** The delivery's own fields of a row that has more (a claimed one). */
export const toDeliveryRow = (row: Stored) => Object.fromEntries(DELIVERY_FIELDS.map((k) => [k, row[k]])) as unknown as DeliveryRow;

/** The endpoint's columns' prefix in a claimed row (the delivery's and the event's own names do not clash). */
const CLAIMED_ENDPOINT = "endpoint_";

/** A claimed delivery: DELIVERY_COLUMNS, endpointColumns("e.", CLAIMED_ENDPOINT) and EVENT_COLUMNS of one row. */
export function toClaimedDelivery(row: Stored): ClaimedDelivery {
  return { delivery: toDeliveryRow(row), endpoint: toEndpointRow(row, CLAIMED_ENDPOINT), event: toEventRow(row) };
}

const ENDPOINT = endpointColumns();
/** A delivery as it starts a new series: pending, due now, no attempt yet, unleased. */
export const NEW_SERIES = `state = 'pending', attempts = 0, next_attempt_at = {now_ms}, lease_owner = NULL, lease_until = NULL, updated_at = {now_ms}`;
/** Pending, due and not leased (or its lease expired), of alias `d`. */
export const DUE = `d.state = 'pending' AND d.next_attempt_at <= {now_ms} AND (d.lease_until IS NULL OR d.lease_until <= {now_ms})`;
/** What a claim returns for the deliveries it leased, read from `deliveries` (as `d`). */
export const claimed = (deliveries: string) => `SELECT ${DELIVERY_COLUMNS}, ${endpointColumns("e.", CLAIMED_ENDPOINT)}, ${EVENT_COLUMNS}
  FROM ${deliveries} d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN events ev ON ev.id = d.event_id ${EVENT_JOINS}`;

const createEndpoint = sql("webhooks.createEndpoint", `INSERT INTO webhook_endpoints (id, url, events, description, enabled, secret, created_at, updated_at)
   VALUES ($id, $url, $events::text[], $description, true, $secret, {now_ms}, {now_ms}) RETURNING ${ENDPOINT}`);
const listEndpoints = sql("webhooks.listEndpoints", `SELECT ${ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id`);
const getEndpoint = sql("webhooks.getEndpoint", `SELECT ${ENDPOINT} FROM webhook_endpoints WHERE id = $id`);
// `setX`: whether the patch gives X (null is a value for events and description).
const updateEndpoint = sql("webhooks.updateEndpoint", `UPDATE webhook_endpoints SET
     url = CASE WHEN $setUrl::boolean THEN $url ELSE url END,
     events = CASE WHEN $setEvents::boolean THEN $events::text[] ELSE events END,
     description = CASE WHEN $setDescription::boolean THEN $description ELSE description END,
     enabled = coalesce($enabled::boolean, enabled),
     disabled_reason = CASE WHEN $enabled::boolean IS NULL THEN disabled_reason END,
     failing_since = CASE WHEN $enabled::boolean THEN NULL ELSE failing_since END,
     updated_at = {now_ms}
   WHERE id = $id RETURNING ${ENDPOINT}`);
// Its deliveries go with it (ON DELETE CASCADE).
const deleteEndpoint = sql("webhooks.deleteEndpoint", `DELETE FROM webhook_endpoints WHERE id = $id`);
const rotateSecret = sql(
  "webhooks.rotateSecret",
  `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = {now_ms} + $keepMs, secret = $secret, updated_at = {now_ms}
   WHERE id = $id RETURNING ${ENDPOINT}`,
);
const setSecrets = sql("webhooks.setSecrets", `UPDATE webhook_endpoints SET secret = $secret, previous_secret = $previousSecret WHERE id = $id AND secret = $was`);
const events = sql("webhooks.events", `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.timestamp > $since ORDER BY ev.timestamp LIMIT $limit`);
const eventsOfType = sql(
  "webhooks.eventsOfType",
  `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.type = $type AND ev.timestamp > $since ORDER BY ev.timestamp LIMIT $limit`,
);
// Deliveries made together (one transaction's events) share a creation time: their events' order breaks the tie.
const deliveries = sql("webhooks.deliveries", `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
   WHERE d.endpoint_id = $endpointId AND ($state::text IS NULL OR d.state = $state)
   ORDER BY d.created_at DESC, ev.timestamp DESC LIMIT $limit`);
const recordAttempt = sql(
  "webhooks.recordAttempt",
  `UPDATE webhook_deliveries SET attempts = attempts + 1, state = $state, last_status = $status, last_error = $error, last_attempt_at = {now_ms},
     next_attempt_at = CASE WHEN $state = 'pending' THEN {now_ms} + $retryInMs END, lease_owner = NULL, lease_until = NULL, updated_at = {now_ms}
   WHERE id = $id AND lease_owner = $owner AND state = 'pending'`,
);
const markSucceeding = sql("webhooks.markSucceeding", `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $id AND failing_since IS NOT NULL`);
// RETURNING sees the new row: disabled as failing, with failures older than $disableAfterMs.
const markFailing = sql<{ disabled: boolean | number | null }>("webhooks.markFailing", `UPDATE webhook_endpoints SET
     failing_since = coalesce(failing_since, {now_ms}),
     enabled = enabled AND NOT coalesce(failing_since < {now_ms} - $disableAfterMs, false),
     disabled_reason = CASE WHEN enabled AND failing_since < {now_ms} - $disableAfterMs THEN 'failing' ELSE disabled_reason END,
     updated_at = CASE WHEN enabled AND failing_since < {now_ms} - $disableAfterMs THEN {now_ms} ELSE updated_at END
   WHERE id = $id
   RETURNING NOT enabled AND disabled_reason = 'failing' AND failing_since < {now_ms} - $disableAfterMs AS disabled`);
const disableEndpoint = sql("webhooks.disableEndpoint", `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $reason, updated_at = {now_ms} WHERE id = $id`);
// Delivery ids made as the migrations' triggers make them.
const replay = sql("webhooks.replay", `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, state, attempts, next_attempt_at, created_at, updated_at)
   SELECT 'dlv_' || {random_hex}, e.id, ev.id, 'pending', 0, {now_ms}, {now_ms}, {now_ms}
   FROM webhook_endpoints e JOIN events ev ON ev.timestamp > $since AND (e.events IS NULL OR ev.type = ANY(e.events))
   WHERE e.id = $endpointId
   ON CONFLICT (endpoint_id, event_id) DO UPDATE SET ${NEW_SERIES}`);

// A disabled endpoint's deliveries wait for it to be enabled again: pending, but not behind.
const deliveryQueue = sql<{ pending: number; overdueMs: number | null }>(
  "webhooks.deliveryQueue",
  `SELECT count(*) AS pending, {now_ms} - min(CASE WHEN e.enabled THEN d.next_attempt_at END) AS "overdueMs"
   FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.state = 'pending'`,
);

const endpoint = (row: Stored | undefined) => (row ? toEndpointRow(row) : undefined);

/** The methods both dialects run alike; claims and retries are in each dialect's repositories.ts. */
export const webhooks = declare<WebhookRepository>()({
  createEndpoint: get(createEndpoint, (e) => ({ id: e.id, url: e.url, events: e.events, description: e.description, secret: e.secret }), (row) => toEndpointRow(row!)),
  listEndpoints: all(listEndpoints, () => ({}), (rows) => rows.map((row) => toEndpointRow(row))),
  getEndpoint: get(getEndpoint, (id) => ({ id }), endpoint),
  updateEndpoint: get(
    updateEndpoint,
    (id, patch) => ({
      id, url: patch.url ?? null, events: patch.events ?? null, description: patch.description ?? null, enabled: patch.enabled ?? null,
      setUrl: patch.url !== undefined, setEvents: patch.events !== undefined, setDescription: patch.description !== undefined,
    }),
    endpoint,
  ),
  deleteEndpoint: run(deleteEndpoint, (id) => ({ id }), (n) => n > 0),
  rotateSecret: get(rotateSecret, (id, secret, keepMs) => ({ id, secret, keepMs }), endpoint),
  setSecrets: run(setSecrets, (id, was, secret, previousSecret) => ({ id, was, secret, previousSecret }), changed),
  events: all(
    choose([events, eventsOfType], (_since: number, _limit: number, type?: EventType) => (type ? eventsOfType : events)),
    (since: number, limit: number, type?: EventType) => ({ since, limit: limit + 1, type }),
    (rows, [, limit]) => {
      const p = page(rows, limit);
      return { rows: p.rows.map(toEventRow), hasMore: p.hasMore };
    },
  ),
  deliveries: all(deliveries, (endpointId, limit, state) => ({ endpointId, limit, state: state ?? null }), (rows) => rows.map(toDeliveryRow)),
  recordAttempt: run(recordAttempt, (id, owner, o) => ({ id, owner, state: o.state, status: o.status, error: o.error, retryInMs: Math.round(o.retryInMs ?? 0) }), changed),
  markSucceeding: run(markSucceeding, (id) => ({ id })),
  markFailing: get(markFailing, (id, disableAfterMs) => ({ id, disableAfterMs }), (row) => Boolean(row?.disabled)),
  disableEndpoint: run(disableEndpoint, (id, reason) => ({ id, reason })),
  replay: run(replay, (endpointId, since) => ({ endpointId, since }), count),
  deliveryQueue: get(deliveryQueue, () => ({}), queueSize),
});
