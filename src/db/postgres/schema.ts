import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import type { EventType } from "../../events/types";
import {
  DELIVERY_STATES,
  ENDPOINT_DISABLED_REASONS,
  IDEMPOTENCY_STATES,
  MESSAGE_DIRECTIONS,
  MESSAGE_STATUSES,
  OPT_OUT_TYPES,
  RUN_STATUSES,
  RUN_TRIGGERS,
} from "../columns";

/** Times: µs since the epoch for messages (`timestamp`, `updated_at`, a workflow's cursor), ms elsewhere. */
const time = (name: string) => bigint(name, { mode: "number" });

export const messages = pgTable(
  "messages",
  {
    id: text("id").primaryKey(),
    phone: text("phone").notNull(),
    body: text("body").notNull(),
    direction: text("direction", { enum: MESSAGE_DIRECTIONS }).notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    timestamp: time("timestamp").notNull(),
    network: text("network").notNull(),
    networkId: text("network_id"),
    error: text("error"),
    updatedAt: time("updated_at").notNull(),
    optOutType: text("opt_out_type", { enum: OPT_OUT_TYPES }),
    replyTo: text("reply_to"),
    sendAt: time("send_at"),
    mediaCount: integer("media_count").notNull().default(0),
  },
  (t) => [
    uniqueIndex("messages_timestamp_uq").on(t.timestamp),
    index("messages_phone_timestamp_idx").on(t.phone, t.timestamp, t.id),
    index("messages_inbound_timestamp_idx").on(t.timestamp).where(sql`direction = 'inbound'`),
    index("messages_inbound_phone_timestamp_idx").on(t.phone, t.timestamp).where(sql`direction = 'inbound'`),
    uniqueIndex("messages_network_id_uq").on(t.network, t.direction, t.networkId),
    index("messages_queued_idx").on(t.updatedAt).where(sql`status = 'queued'`),
    // Only waiting rows: due ones (send_at <= now) and the listing, soonest first.
    index("messages_scheduled_idx").on(t.sendAt, t.timestamp).where(sql`status = 'scheduled'`),
  ],
);

/** A message's files (pictures, …): the bytes are in the media store (src/media) under `store_key`. */
export const media = pgTable(
  "media",
  {
    id: text("id").primaryKey(),
    messageId: text("message_id")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    storeKey: text("store_key").notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [uniqueIndex("media_message_position_uq").on(t.messageId, t.position)],
);

/**
 * The one clock of message timestamps, one row. Each insert of a message first moves it
 * (`t = greatest(t + 1, clock_timestamp() in µs)`) in its own transaction; the row lock is
 * held to commit, so timestamps increase in the order messages become visible, whichever
 * process writes them.
 */
export const messageClock = pgTable(
  "message_clock",
  {
    id: boolean("id").primaryKey().default(true),
    t: time("t").notNull(),
  },
  (t) => [check("message_clock_one_row", sql`${t.id}`)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    hash: text("hash").notNull().unique(),
    prefix: text("prefix").notNull(),
    createdAt: time("created_at").notNull(),
    revokedAt: time("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_active_name_uq").on(t.name).where(sql`revoked_at IS NULL`)],
);

/**
 * Operator console sign-ins (src/auth/sessions.ts): a row a session, keyed by the hash of
 * its cookie token (the token itself is never stored). Times in ms.
 */
export const consoleSessions = pgTable(
  "console_sessions",
  {
    idHash: text("id_hash").primaryKey(),
    keyHash: text("key_hash").notNull(),
    csrfToken: text("csrf_token").notNull(),
    createdAt: time("created_at").notNull(),
    expiresAt: time("expires_at").notNull(),
  },
  (t) => [index("console_sessions_expires_idx").on(t.expiresAt)],
);

/** Every generated reply, sent or not. */
export const generations = pgTable("generations", {
  id: text("id").primaryKey(),
  phone: text("phone").notNull(),
  body: text("body").notNull(),
  model: text("model").notNull(),
  language: text("language"),
  createdAt: time("created_at").notNull(),
  messageId: text("message_id"),
});

/** Idempotency-Key records (docs/api.md): a request's answer, kept for 24 hours. */
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    state: text("state", { enum: IDEMPOTENCY_STATES }).notNull(),
    response: text("response"),
    messageId: text("message_id"),
    lockedUntil: time("locked_until").notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_created_idx").on(t.createdAt)],
);

/** One row a workflow: its poll cursor, its backoff and the lease that keeps runs from overlapping. */
export const workflows = pgTable("workflows", {
  name: text("name").primaryKey(),
  cursor: time("cursor").notNull(),
  failures: integer("failures").notNull().default(0),
  backoffUntil: time("backoff_until"),
  leaseOwner: text("lease_owner"),
  leaseUntil: time("lease_until"),
  createdAt: time("created_at").notNull(),
});

/** A workflow's own JSON values (`ctx.state`). */
export const workflowState = pgTable(
  "workflow_state",
  {
    workflow: text("workflow").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
    updatedAt: time("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workflow, t.key] })],
);

/** Every run of every workflow. */
export const workflowRuns = pgTable(
  "workflow_runs",
  {
    id: text("id").primaryKey(),
    workflow: text("workflow").notNull(),
    trigger: text("trigger", { enum: RUN_TRIGGERS }).notNull(),
    dryRun: boolean("dry_run").notNull(),
    startedAt: time("started_at").notNull(),
    endedAt: time("ended_at"),
    status: text("status", { enum: RUN_STATUSES }).notNull(),
    error: text("error"),
    handled: integer("handled").notNull().default(0),
  },
  (t) => [index("workflow_runs_workflow_started_idx").on(t.workflow, t.startedAt), index("workflow_runs_started_idx").on(t.startedAt)],
);

/** Every delivery report a network sent about an outbound message, with its time. */
export const statusReports = pgTable(
  "status_reports",
  {
    id: text("id").primaryKey(),
    messageId: text("message_id").notNull(),
    network: text("network").notNull(),
    networkStatus: text("network_status").notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    reportedAt: time("reported_at").notNull(),
    receivedAt: time("received_at").notNull(),
    applied: boolean("applied").notNull(),
    error: text("error"),
  },
  (t) => [index("status_reports_message_idx").on(t.messageId)],
);

/** Small values a network driver keeps (BlueBubbles' catch-up cursor). */
export const networkState = pgTable(
  "network_state",
  {
    network: text("network").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.key] })],
);

/**
 * Each contact's opt-out, and how many messages it has, kept by a trigger on `messages` (see the migration),
 * so a history page's `total` costs one lookup, not a count over the contact's rows.
 */
export const contacts = pgTable("contacts", {
  phone: text("phone").primaryKey(),
  messages: integer("messages").notNull(),
  optedOut: boolean("opted_out").notNull().default(false),
  optedOutAt: time("opted_out_at"),
});

/** Leases by name that any process may take (the maintenance leader). */
export const leases = pgTable("leases", {
  name: text("name").primaryKey(),
  owner: text("owner").notNull(),
  until: time("until").notNull(),
});

/** Where events are pushed (docs/api.md, outbound webhooks). Times in ms. */
export const webhookEndpoints = pgTable("webhook_endpoints", {
  id: text("id").primaryKey(),
  url: text("url").notNull(),
  events: text("events").array().$type<EventType[]>(),
  description: text("description"),
  enabled: boolean("enabled").notNull(),
  disabledReason: text("disabled_reason", { enum: ENDPOINT_DISABLED_REASONS }),
  secret: text("secret").notNull(),
  previousSecret: text("previous_secret"),
  previousSecretUntil: time("previous_secret_until"),
  failingSince: time("failing_since"),
  createdAt: time("created_at").notNull(),
  updatedAt: time("updated_at").notNull(),
});

/**
 * The outbox: one row an event, written by triggers (see the migration) in the transaction
 * of the change it reports, with the message's changing fields as they were then.
 */
export const events = pgTable(
  "events",
  {
    id: text("id").primaryKey(),
    type: text("type").$type<EventType>().notNull(),
    timestamp: time("timestamp").notNull(),
    messageId: text("message_id"),
    status: text("status", { enum: MESSAGE_STATUSES }),
    previousStatus: text("previous_status", { enum: MESSAGE_STATUSES }),
    error: text("error"),
    runId: text("run_id"),
  },
  (t) => [
    uniqueIndex("events_timestamp_uq").on(t.timestamp),
    index("events_type_timestamp_idx").on(t.type, t.timestamp),
    index("events_run_idx").on(t.runId).where(sql`run_id IS NOT NULL`),
  ],
);

/**
 * The one clock of event timestamps, one row, as `message_clock` is for messages: each event
 * moves it (`t = greatest(t + 1, clock_timestamp() in µs)`) and holds its row lock to commit.
 */
export const eventClock = pgTable(
  "event_clock",
  {
    id: boolean("id").primaryKey().default(true),
    t: time("t").notNull(),
  },
  (t) => [check("event_clock_one_row", sql`${t.id}`)],
);

/** One event's delivery to one endpoint, with its attempts. Times in ms. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    endpointId: text("endpoint_id")
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: "cascade" }),
    eventId: text("event_id")
      .notNull()
      .references(() => events.id, { onDelete: "cascade" }),
    state: text("state", { enum: DELIVERY_STATES }).notNull(),
    attempts: integer("attempts").notNull(),
    lastStatus: integer("last_status"),
    lastError: text("last_error"),
    lastAttemptAt: time("last_attempt_at"),
    nextAttemptAt: time("next_attempt_at"),
    leaseOwner: text("lease_owner"),
    leaseUntil: time("lease_until"),
    createdAt: time("created_at").notNull(),
    updatedAt: time("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_endpoint_event_uq").on(t.endpointId, t.eventId),
    // Only pending rows: the claim's per-endpoint scan, earliest due first.
    index("webhook_deliveries_due_idx").on(t.endpointId, t.nextAttemptAt).where(sql`state = 'pending'`),
    index("webhook_deliveries_endpoint_created_idx").on(t.endpointId, t.createdAt),
    index("webhook_deliveries_event_idx").on(t.eventId),
  ],
);
