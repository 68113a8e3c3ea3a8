import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { IDEMPOTENCY_STATES, MESSAGE_DIRECTIONS, MESSAGE_STATUSES, OPT_OUT_TYPES, RUN_STATUSES, RUN_TRIGGERS } from "../columns";

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
    /** Microseconds since the epoch, from `message_clock`: unique and strictly increasing in commit order. */
    timestamp: time("timestamp").notNull(),
    network: text("network").notNull(),
    /** The network's own id for this message, used to deduplicate webhooks. */
    networkId: text("network_id"),
    error: text("error"),
    /** Microseconds since the epoch. */
    updatedAt: time("updated_at").notNull(),
    /** Inbound only: STOP, START or HELP when the network classed the text as such a keyword. */
    optOutType: text("opt_out_type", { enum: OPT_OUT_TYPES }),
  },
  (t) => [
    uniqueIndex("messages_timestamp_uq").on(t.timestamp),
    index("messages_phone_timestamp_idx").on(t.phone, t.timestamp, t.id),
    index("messages_inbound_timestamp_idx").on(t.timestamp).where(sql`direction = 'inbound'`),
    index("messages_inbound_phone_timestamp_idx").on(t.phone, t.timestamp).where(sql`direction = 'inbound'`),
    uniqueIndex("messages_network_id_uq").on(t.network, t.direction, t.networkId),
    index("messages_queued_idx").on(t.updatedAt).where(sql`status = 'queued'`),
  ],
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
    /** The last timestamp given out (µs since the epoch). */
    t: time("t").notNull(),
  },
  (t) => [check("message_clock_one_row", sql`${t.id}`)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    /** Unique among keys in use; a revoked key's name may be given to a new key. */
    name: text("name").notNull(),
    /** SHA-256 of the key, hex. The key itself is never stored. */
    hash: text("hash").notNull().unique(),
    /** The first characters of the key, to recognise it in listings. */
    prefix: text("prefix").notNull(),
    createdAt: time("created_at").notNull(),
    revokedAt: time("revoked_at"),
  },
  (t) => [uniqueIndex("api_keys_active_name_uq").on(t.name).where(sql`revoked_at IS NULL`)],
);

/** Every generated reply, sent or not. */
export const generations = pgTable("generations", {
  id: text("id").primaryKey(),
  phone: text("phone").notNull(),
  body: text("body").notNull(),
  model: text("model").notNull(),
  language: text("language"),
  createdAt: time("created_at").notNull(),
  /** The sent message, when the reply was sent. */
  messageId: text("message_id"),
});

/** Idempotency-Key records (docs/api.md): a request's answer, kept for 24 hours. */
export const idempotencyKeys = pgTable(
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
    lockedUntil: time("locked_until").notNull(),
    createdAt: time("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_created_idx").on(t.createdAt)],
);

/** One row a workflow: its poll cursor, its backoff and the lease that keeps runs from overlapping. */
export const workflows = pgTable("workflows", {
  name: text("name").primaryKey(),
  /** Timestamp (µs, as messages.timestamp) of the last inbound message a successful run polled. */
  cursor: time("cursor").notNull(),
  /** Failed runs in a row. */
  failures: integer("failures").notNull().default(0),
  /** No scheduled run before this (ms), after failures. */
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
    /** Inbound messages the run polled. */
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
    /** The network's own word (Twilio's `undelivered`, …). */
    networkStatus: text("network_status").notNull(),
    status: text("status", { enum: MESSAGE_STATUSES }).notNull(),
    /** When the network says it happened (ms), else when it arrived. */
    reportedAt: time("reported_at").notNull(),
    receivedAt: time("received_at").notNull(),
    /** Whether it moved the message (false when out of order or after a final status). */
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
 * How many messages each contact has, kept by a trigger on `messages` (see the migration),
 * so a history page's `total` costs one lookup, not a count over the contact's rows.
 */
export const contacts = pgTable("contacts", {
  phone: text("phone").primaryKey(),
  messages: integer("messages").notNull(),
});

/** Leases by name that any process may take (the maintenance leader). */
export const leases = pgTable("leases", {
  name: text("name").primaryKey(),
  owner: text("owner").notNull(),
  /** ms since the epoch. */
  until: time("until").notNull(),
});
