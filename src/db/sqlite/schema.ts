import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { EventType } from "../../vocabulary/events";
import { MESSAGE_STATUSES } from "../../vocabulary/message-status";
import { IDEMPOTENCY_STATES, MESSAGE_DIRECTIONS, OPT_OUT_TYPES } from "../../vocabulary/messages";
import { DELIVERY_STATES, ENDPOINT_DISABLED_REASONS } from "../../vocabulary/webhooks";
import { RUN_STATUSES, RUN_TRIGGERS } from "../../vocabulary/workflows";

// The tables and their meaning are documented on the port's row types (src/db/port.ts).

export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    phone: text("phone").notNull(),
    body: text("body").notNull(),
    direction: text("direction", { enum: MESSAGE_DIRECTIONS }).notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    /** Microseconds since the epoch; unique and strictly increasing in insertion order. */
    timestamp: integer("timestamp").notNull(),
    network: text("network").notNull(),
    /** The network's own id for this message, used to deduplicate webhooks. */
    networkId: text("network_id"),
    error: text("error"),
    /** Microseconds since the epoch. */
    updatedAt: integer("updated_at").notNull(),
    /** Inbound only: STOP, START or HELP when the network classed the text as such a keyword. */
    optOutType: text("opt_out_type", { enum: OPT_OUT_TYPES }),
    /** The id of our message this one answers (a threaded reply); no foreign key: an id the network names may be gone. */
    replyTo: text("reply_to"),
    /** Scheduled messages only: when to send it (ms since the epoch). */
    sendAt: integer("send_at"),
    /** Rows in `media` of this message, so pages read media only for the rows that have some. */
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
export const media = sqliteTable(
  "media",
  {
    /** `med_` + 32 hex digits. */
    id: text("id").primaryKey(),
    messageId: text("message_id")
      .notNull()
      .references(() => messages.id, { onDelete: "cascade" }),
    /** 0 to 9: the order of the message's files. */
    position: integer("position").notNull(),
    contentType: text("content_type").notNull(),
    /** Bytes. */
    size: integer("size").notNull(),
    /** Where the bytes are in the media store. */
    storeKey: text("store_key").notNull(),
    /** ms since the epoch. */
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("media_message_position_uq").on(t.messageId, t.position)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    /** Unique among keys in use; a revoked key's name may be given to a new key. */
    name: text("name").notNull(),
    /** SHA-256 of the key, hex. The key itself is never stored. */
    hash: text("hash").notNull().unique(),
    /** The first characters of the key, to recognise it in listings. */
    prefix: text("prefix").notNull(),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_active_name_uq").on(t.name).where(sql`revoked_at IS NULL`)],
);

/**
 * Operator console sign-ins (src/auth/sessions.ts): a row a session, keyed by the hash of
 * its cookie token (the token itself is never stored). Times in ms.
 */
export const consoleSessions = sqliteTable(
  "console_sessions",
  {
    /** SHA-256 of the cookie token, hex. */
    idHash: text("id_hash").primaryKey(),
    /** SHA-256 of the API key signed in with, hex: checked again on every request. */
    keyHash: text("key_hash").notNull(),
    csrfToken: text("csrf_token").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("console_sessions_expires_idx").on(t.expiresAt)],
);

/** Every generated reply, sent or not. */
export const generations = sqliteTable("generations", {
  id: text("id").primaryKey(),
  phone: text("phone").notNull(),
  body: text("body").notNull(),
  model: text("model").notNull(),
  language: text("language"),
  createdAt: integer("created_at").notNull(),
  /** The sent message, when the reply was sent. */
  messageId: text("message_id"),
});

/** Idempotency-Key records (docs/api.md): a request's answer, kept for 24 hours. */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    /** Whose key: an API key's id, or a workflow's name. */
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    /** SHA-256 of the route and the parsed request: the same key with another body is a conflict. */
    fingerprint: text("fingerprint").notNull(),
    state: text("state", { enum: IDEMPOTENCY_STATES }).notNull(),
    /** The answer to replay; on a pending row, the answer to give once its message is sent. */
    response: text("response"),
    /** The message this request sends, once stored. */
    messageId: text("message_id"),
    /** A pending row without a message may be taken over after this (its process died). */
    lockedUntil: integer("locked_until").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_created_idx").on(t.createdAt)],
);

/** One row a workflow: its poll cursor, its backoff and the lease that keeps runs from overlapping. */
export const workflows = sqliteTable("workflows", {
  name: text("name").primaryKey(),
  /** Timestamp (µs, as messages.timestamp) of the last inbound message a successful run polled. */
  cursor: integer("cursor").notNull(),
  /** Failed runs in a row. */
  failures: integer("failures").notNull().default(0),
  /** No scheduled run before this (ms), after failures. */
  backoffUntil: integer("backoff_until"),
  leaseOwner: text("lease_owner"),
  leaseUntil: integer("lease_until"),
  createdAt: integer("created_at").notNull(),
});

/** A workflow's own JSON values (`ctx.state`). */
export const workflowState = sqliteTable(
  "workflow_state",
  {
    workflow: text("workflow").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workflow, t.key] })],
);

/** Every run of every workflow. */
export const workflowRuns = sqliteTable(
  "workflow_runs",
  {
    id: text("id").primaryKey(),
    workflow: text("workflow").notNull(),
    trigger: text("trigger", { enum: RUN_TRIGGERS }).notNull(),
    dryRun: integer("dry_run", { mode: "boolean" }).notNull(),
    startedAt: integer("started_at").notNull(),
    endedAt: integer("ended_at"),
    status: text("status", { enum: RUN_STATUSES }).notNull(),
    error: text("error"),
    /** Inbound messages the run polled. */
    handled: integer("handled").notNull().default(0),
  },
  (t) => [index("workflow_runs_workflow_started_idx").on(t.workflow, t.startedAt), index("workflow_runs_started_idx").on(t.startedAt)],
);

/** Every delivery report a network sent about an outbound message, with its time. */
export const statusReports = sqliteTable(
  "status_reports",
  {
    id: text("id").primaryKey(),
    messageId: text("message_id").notNull(),
    network: text("network").notNull(),
    /** The network's own word (Twilio's `undelivered`, …). */
    networkStatus: text("network_status").notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    /** When the network says it happened (ms), else when it arrived. */
    reportedAt: integer("reported_at").notNull(),
    receivedAt: integer("received_at").notNull(),
    /** Whether it moved the message (false when out of order or after a final status). */
    applied: integer("applied", { mode: "boolean" }).notNull(),
    error: text("error"),
  },
  (t) => [index("status_reports_message_idx").on(t.messageId)],
);

/** Small values a network driver keeps (BlueBubbles' catch-up cursor). */
export const networkState = sqliteTable(
  "network_state",
  {
    network: text("network").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.key] })],
);

/**
 * Each contact's opt-out, and how many messages it has, kept by triggers on `messages` (see the migration),
 * so a history page's `total` costs one lookup, not a count over the contact's rows.
 */
export const contacts = sqliteTable("contacts", {
  phone: text("phone").primaryKey(),
  messages: integer("messages").notNull(),
  /** The contact replied STOP (or the network said it opted out); a row may exist before any message. */
  optedOut: integer("opted_out", { mode: "boolean" }).notNull().default(false),
  /** When it opted out (ms); null when it has not. */
  optedOutAt: integer("opted_out_at"),
});

/** Leases by name that any process may take (the maintenance leader). */
export const leases = sqliteTable("leases", {
  name: text("name").primaryKey(),
  owner: text("owner").notNull(),
  /** ms since the epoch. */
  until: integer("until").notNull(),
});

/** Where events are pushed (docs/api.md, outbound webhooks). Times in ms. */
export const webhookEndpoints = sqliteTable("webhook_endpoints", {
  id: text("id").primaryKey(),
  url: text("url").notNull(),
  /** The event types it subscribes to, a JSON array; null: every type. */
  events: text("events", { mode: "json" }).$type<EventType[]>(),
  description: text("description"),
  enabled: integer("enabled", { mode: "boolean" }).notNull(),
  /** Why Textwire disabled it; null when enabled or disabled by a client. */
  disabledReason: text("disabled_reason", { enum: ENDPOINT_DISABLED_REASONS }),
  secret: text("secret").notNull(),
  previousSecret: text("previous_secret"),
  previousSecretUntil: integer("previous_secret_until"),
  /** The first failed attempt since the last success. */
  failingSince: integer("failing_since"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * The outbox: one row an event, written by triggers (see the migration) in the transaction
 * of the change it reports, with the message's changing fields as they were then.
 */
export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    type: text("type").$type<EventType>().notNull(),
    /** Microseconds since the epoch; unique and strictly increasing in commit order (the poll cursor rule). */
    timestamp: integer("timestamp").notNull(),
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

/** One event's delivery to one endpoint, with its attempts. Times in ms. */
export const webhookDeliveries = sqliteTable(
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
    lastAttemptAt: integer("last_attempt_at"),
    nextAttemptAt: integer("next_attempt_at"),
    leaseOwner: text("lease_owner"),
    leaseUntil: integer("lease_until"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_endpoint_event_uq").on(t.endpointId, t.eventId),
    // Only pending rows: the claim's per-endpoint scan, earliest due first.
    index("webhook_deliveries_due_idx").on(t.endpointId, t.nextAttemptAt).where(sql`state = 'pending'`),
    index("webhook_deliveries_endpoint_created_idx").on(t.endpointId, t.createdAt),
    index("webhook_deliveries_event_idx").on(t.eventId),
  ],
);
