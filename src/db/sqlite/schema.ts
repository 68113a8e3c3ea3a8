import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
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

// Columns mean what the port's rows say (src/db/messages.ts, …); tables are described once, in src/db/postgres/schema.ts.

export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    phone: text("phone").notNull(),
    body: text("body").notNull(),
    direction: text("direction", { enum: MESSAGE_DIRECTIONS }).notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    timestamp: integer("timestamp").notNull(),
    network: text("network").notNull(),
    networkId: text("network_id"),
    error: text("error"),
    updatedAt: integer("updated_at").notNull(),
    optOutType: text("opt_out_type", { enum: OPT_OUT_TYPES }),
    replyTo: text("reply_to"),
    sendAt: integer("send_at"),
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

export const media = sqliteTable(
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
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("media_message_position_uq").on(t.messageId, t.position)],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    hash: text("hash").notNull().unique(),
    prefix: text("prefix").notNull(),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_active_name_uq").on(t.name).where(sql`revoked_at IS NULL`)],
);

export const consoleSessions = sqliteTable(
  "console_sessions",
  {
    idHash: text("id_hash").primaryKey(),
    keyHash: text("key_hash").notNull(),
    csrfToken: text("csrf_token").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
  },
  (t) => [index("console_sessions_expires_idx").on(t.expiresAt)],
);

export const generations = sqliteTable("generations", {
  id: text("id").primaryKey(),
  phone: text("phone").notNull(),
  body: text("body").notNull(),
  model: text("model").notNull(),
  language: text("language"),
  createdAt: integer("created_at").notNull(),
  messageId: text("message_id"),
});

export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    state: text("state", { enum: IDEMPOTENCY_STATES }).notNull(),
    response: text("response"),
    messageId: text("message_id"),
    lockedUntil: integer("locked_until").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_created_idx").on(t.createdAt)],
);

export const workflows = sqliteTable("workflows", {
  name: text("name").primaryKey(),
  cursor: integer("cursor").notNull(),
  failures: integer("failures").notNull().default(0),
  backoffUntil: integer("backoff_until"),
  leaseOwner: text("lease_owner"),
  leaseUntil: integer("lease_until"),
  createdAt: integer("created_at").notNull(),
});

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
    handled: integer("handled").notNull().default(0),
  },
  (t) => [index("workflow_runs_workflow_started_idx").on(t.workflow, t.startedAt), index("workflow_runs_started_idx").on(t.startedAt)],
);

export const statusReports = sqliteTable(
  "status_reports",
  {
    id: text("id").primaryKey(),
    messageId: text("message_id").notNull(),
    network: text("network").notNull(),
    networkStatus: text("network_status").notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    reportedAt: integer("reported_at").notNull(),
    receivedAt: integer("received_at").notNull(),
    applied: integer("applied", { mode: "boolean" }).notNull(),
    error: text("error"),
  },
  (t) => [index("status_reports_message_idx").on(t.messageId)],
);

export const networkState = sqliteTable(
  "network_state",
  {
    network: text("network").notNull(),
    key: text("key").notNull(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.network, t.key] })],
);

export const contacts = sqliteTable("contacts", {
  phone: text("phone").primaryKey(),
  messages: integer("messages").notNull(),
  optedOut: integer("opted_out", { mode: "boolean" }).notNull().default(false),
  optedOutAt: integer("opted_out_at"),
});

export const leases = sqliteTable("leases", {
  name: text("name").primaryKey(),
  owner: text("owner").notNull(),
  until: integer("until").notNull(),
});

export const webhookEndpoints = sqliteTable("webhook_endpoints", {
  id: text("id").primaryKey(),
  url: text("url").notNull(),
  events: text("events", { mode: "json" }).$type<EventType[]>(),
  description: text("description"),
  enabled: integer("enabled", { mode: "boolean" }).notNull(),
  disabledReason: text("disabled_reason", { enum: ENDPOINT_DISABLED_REASONS }),
  secret: text("secret").notNull(),
  previousSecret: text("previous_secret"),
  previousSecretUntil: integer("previous_secret_until"),
  failingSince: integer("failing_since"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    type: text("type").$type<EventType>().notNull(),
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
