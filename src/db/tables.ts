import { sql } from "drizzle-orm";
import { CHAT_KINDS } from "../vocabulary/chats";
import { CHAT_MODES } from "../vocabulary/chat-modes";
import { DEFAULT_LINE_ID, LINE_MANAGERS } from "../vocabulary/lines";
import { MESSAGE_STATUSES } from "../vocabulary/message-status";
import { IDEMPOTENCY_STATES, MESSAGE_DIRECTIONS, OPT_OUT_TYPES } from "../vocabulary/messages";
import { REACTIONS } from "../vocabulary/reactions";
import { REACHES } from "../vocabulary/scopes";
import { DELIVERY_STATES, ENDPOINT_DISABLED_REASONS } from "../vocabulary/webhooks";
import { RUN_STATUSES, RUN_TRIGGERS } from "../vocabulary/workflows";

// Loosely typed: each dialect's Drizzle builders have types of their own.
type Any = any;
type Builder = (...args: Any[]) => Any;

/**
 * A dialect's Drizzle builders: `time` is a µs or ms time (µs for messages' `timestamp` and
 * `updated_at`, a workflow's cursor and events' `timestamp`; ms elsewhere), `list` a list of texts.
 */
export type Core = Record<"text" | "integer" | "time" | "bool" | "list" | "index" | "uniqueIndex" | "primaryKey", Builder> & {
  table: (name: string, columns: Record<string, Any>, extra?: (t: Record<string, Any>) => Any[]) => Any;
};

/**
 * The tables of both dialects, declared once over each one's builders
 * (src/db/sqlite/schema.ts, src/db/postgres/schema.ts, which drizzle-kit reads). Columns
 * mean what the port's rows say (src/db/messages.ts, …).
 */
export function tables(c: Core) {
  const messages = c.table(
    "messages",
    {
      id: c.text("id").primaryKey(),
      phone: c.text("phone").notNull(),
      body: c.text("body").notNull(),
      direction: c.text("direction", { enum: MESSAGE_DIRECTIONS }).notNull(),
      status: c.text("status", { enum: MESSAGE_STATUSES }).notNull(),
      timestamp: c.time("timestamp").notNull(),
      network: c.text("network").notNull(),
      networkId: c.text("network_id"),
      error: c.text("error"),
      updatedAt: c.time("updated_at").notNull(),
      optOutType: c.text("opt_out_type", { enum: OPT_OUT_TYPES }),
      replyTo: c.text("reply_to"),
      sendAt: c.time("send_at"),
      mediaCount: c.integer("media_count").notNull().default(0),
      reactionCount: c.integer("reaction_count").notNull().default(0),
      readAt: c.time("read_at"),
      editedAt: c.time("edited_at"),
      editCount: c.integer("edit_count").notNull().default(0),
      unsentAt: c.time("unsent_at"),
      /** A group chat's id; null: the direct chat with `phone` (then `phone` is the contact; in a group, the sender, '' for ours). */
      chatId: c.text("chat_id"),
      /** The line it went out or came in on (src/lines); every message before lines is on the environment's line. */
      lineId: c.text("line_id").notNull().default(DEFAULT_LINE_ID),
    },
    (t) => [
      c.uniqueIndex("messages_timestamp_uq").on(t.timestamp),
      c.index("messages_phone_timestamp_idx").on(t.phone, t.timestamp, t.id),
      c.index("messages_inbound_timestamp_idx").on(t.timestamp).where(sql`direction = 'inbound'`),
      c.index("messages_inbound_phone_timestamp_idx").on(t.phone, t.timestamp).where(sql`direction = 'inbound'`),
      c.uniqueIndex("messages_network_id_uq").on(t.network, t.direction, t.networkId),
      c.index("messages_queued_idx").on(t.updatedAt).where(sql`status = 'queued'`),
      // Only waiting rows: due ones (send_at <= now) and the listing, soonest first.
      c.index("messages_scheduled_idx").on(t.sendAt, t.timestamp).where(sql`status = 'scheduled'`),
      c.index("messages_unread_idx").on(t.phone).where(sql`direction = 'inbound' AND read_at IS NULL`),
      c.index("messages_chat_timestamp_idx").on(t.chatId, t.timestamp, t.id).where(sql`chat_id IS NOT NULL`),
      // A group's unread count (the chat record's `unread`) and marking it read.
      c.index("messages_chat_unread_idx").on(t.chatId).where(sql`chat_id IS NOT NULL AND direction = 'inbound' AND read_at IS NULL`),
      // GET /api/drafts: the drafts waiting, oldest first.
      c.index("messages_draft_idx").on(t.timestamp).where(sql`status = 'draft'`),
    ],
  );

  /**
   * Conversations: a direct chat a contact (made by its first message, by trigger) and the
   * group chats. `messages` and `last_message_at` (µs) are kept by triggers on `messages`.
   */
  const chats = c.table(
    "chats",
    {
      id: c.text("id").primaryKey(),
      kind: c.text("kind", { enum: CHAT_KINDS }).notNull(),
      name: c.text("name"),
      participants: c.list("participants").notNull(),
      /** A group's network and that network's id of it (BlueBubbles' chat guid); null for direct chats. */
      network: c.text("network"),
      networkId: c.text("network_id"),
      createdAt: c.time("created_at").notNull(),
      lastMessageAt: c.time("last_message_at"),
      messages: c.integer("messages").notNull().default(0),
      /** A group's: our typing indicator in it is on until then; the maintenance loop stops it after (a direct chat's is on `contacts`). */
      ourTypingUntil: c.time("our_typing_until"),
      /** A group's line; a direct chat's: the line of its last message (by trigger), where a send to the contact sticks (src/lines/route.ts). */
      lineId: c.text("line_id").notNull().default(DEFAULT_LINE_ID),
      /** Set by hand, handoff or its return (src/messages/modes.ts); null: DEFAULT_CHAT_MODE, as the last start wrote it. */
      mode: c.text("mode", { enum: CHAT_MODES }),
      /** A `human` chat's mode before it (null: the default), which it returns to at `human_until` (ms). */
      modeBefore: c.text("mode_before", { enum: CHAT_MODES }),
      humanUntil: c.time("human_until"),
    },
    (t) => [
      c.uniqueIndex("chats_network_id_uq").on(t.network, t.networkId),
      // The handoff sweep: the human chats whose time is up, soonest first.
      c.index("chats_human_until_idx").on(t.humanUntil).where(sql`human_until IS NOT NULL`),
      // GET /api/chats?kind= (the console's groups): a page in order from the index, however many direct chats there are.
      c.index("chats_kind_activity_idx").on(t.kind, sql`coalesce(last_message_at, created_at)`, t.id),
      c.index("chats_our_typing_idx").on(t.ourTypingUntil).where(sql`our_typing_until IS NOT NULL`),
    ],
  );

  /** Participants who replied STOP in a group: automated sends to it wait until they send START there. */
  const chatMutes = c.table(
    "chat_mutes",
    {
      chatId: c.text("chat_id").notNull().references(() => chats.id, { onDelete: "cascade" }),
      phone: c.text("phone").notNull(),
      createdAt: c.time("created_at").notNull(),
    },
    (t) => [c.primaryKey({ columns: [t.chatId, t.phone] })],
  );

  /** The reactions standing on a message: one a person (ours: `phone` ''), replaced by their next; counted by triggers in `reaction_count`. */
  const reactions = c.table(
    "reactions",
    {
      messageId: c.text("message_id").notNull().references(() => messages.id, { onDelete: "cascade" }),
      direction: c.text("direction", { enum: MESSAGE_DIRECTIONS }).notNull(),
      phone: c.text("phone").notNull(),
      reaction: c.text("reaction", { enum: REACTIONS }).notNull(),
      createdAt: c.time("created_at").notNull(),
    },
    (t) => [c.primaryKey({ columns: [t.messageId, t.direction, t.phone] })],
  );

  /** A message's files (pictures, …): the bytes are in the media store (src/media) under `store_key`. */
  const media = c.table(
    "media",
    {
      id: c.text("id").primaryKey(),
      messageId: c.text("message_id").notNull().references(() => messages.id, { onDelete: "cascade" }),
      position: c.integer("position").notNull(),
      contentType: c.text("content_type").notNull(),
      size: c.integer("size").notNull(),
      storeKey: c.text("store_key").notNull(),
      createdAt: c.time("created_at").notNull(),
    },
    (t) => [c.uniqueIndex("media_message_position_uq").on(t.messageId, t.position)],
  );

  const apiKeys = c.table(
    "api_keys",
    {
      id: c.text("id").primaryKey(),
      name: c.text("name").notNull(),
      hash: c.text("hash").notNull().unique(),
      prefix: c.text("prefix").notNull(),
      createdAt: c.time("created_at").notNull(),
      revokedAt: c.time("revoked_at"),
      // Scopes and limits (src/auth/policy.ts): space-separated, alike on both databases; keys made before them hold `*`.
      scopes: c.text("scopes").notNull().default("*"),
      lines: c.text("lines"),
      reach: c.text("reach", { enum: REACHES }).notNull().default("any"),
      expiresAt: c.time("expires_at"),
      createdBy: c.text("created_by"),
      lastUsedAt: c.time("last_used_at"),
    },
    (t) => [c.uniqueIndex("api_keys_active_name_uq").on(t.name).where(sql`revoked_at IS NULL`)],
  );

  /** Operator console sign-ins (src/auth/sessions.ts): a row a session, keyed by the hash of its cookie token (the token itself is never stored). Times in ms. */
  const consoleSessions = c.table(
    "console_sessions",
    {
      idHash: c.text("id_hash").primaryKey(),
      keyHash: c.text("key_hash").notNull(),
      csrfToken: c.text("csrf_token").notNull(),
      createdAt: c.time("created_at").notNull(),
      expiresAt: c.time("expires_at").notNull(),
    },
    (t) => [c.index("console_sessions_expires_idx").on(t.expiresAt)],
  );

  /** Every generated reply, sent or not. */
  const generations = c.table(
    "generations",
    {
      id: c.text("id").primaryKey(),
      phone: c.text("phone").notNull(),
      body: c.text("body").notNull(),
      model: c.text("model").notNull(),
      language: c.text("language"),
      createdAt: c.time("created_at").notNull(),
      messageId: c.text("message_id"),
    },
    // Retention's batches find the oldest rows without a scan (src/db/retention.ts).
    (t) => [c.index("generations_created_idx").on(t.createdAt)],
  );

  /** Idempotency-Key records (docs/api.md): a request's answer, kept for 24 hours. */
  const idempotencyKeys = c.table(
    "idempotency_keys",
    {
      scope: c.text("scope").notNull(),
      key: c.text("key").notNull(),
      fingerprint: c.text("fingerprint").notNull(),
      state: c.text("state", { enum: IDEMPOTENCY_STATES }).notNull(),
      response: c.text("response"),
      messageId: c.text("message_id"),
      lockedUntil: c.time("locked_until").notNull(),
      createdAt: c.time("created_at").notNull(),
    },
    (t) => [c.primaryKey({ columns: [t.scope, t.key] }), c.index("idempotency_created_idx").on(t.createdAt)],
  );

  /** One row a workflow: its poll cursor, its backoff and the lease that keeps runs from overlapping. */
  const workflows = c.table("workflows", {
    name: c.text("name").primaryKey(),
    cursor: c.time("cursor").notNull(),
    failures: c.integer("failures").notNull().default(0),
    backoffUntil: c.time("backoff_until"),
    leaseOwner: c.text("lease_owner"),
    leaseUntil: c.time("lease_until"),
    createdAt: c.time("created_at").notNull(),
  });

  /** A workflow's own JSON values (`ctx.state`). */
  const workflowState = c.table(
    "workflow_state",
    {
      workflow: c.text("workflow").notNull(),
      key: c.text("key").notNull(),
      value: c.text("value").notNull(),
      updatedAt: c.time("updated_at").notNull(),
    },
    (t) => [c.primaryKey({ columns: [t.workflow, t.key] })],
  );

  /** Every run of every workflow. */
  const workflowRuns = c.table(
    "workflow_runs",
    {
      id: c.text("id").primaryKey(),
      workflow: c.text("workflow").notNull(),
      trigger: c.text("trigger", { enum: RUN_TRIGGERS }).notNull(),
      dryRun: c.bool("dry_run").notNull(),
      startedAt: c.time("started_at").notNull(),
      endedAt: c.time("ended_at"),
      status: c.text("status", { enum: RUN_STATUSES }).notNull(),
      error: c.text("error"),
      handled: c.integer("handled").notNull().default(0),
    },
    (t) => [c.index("workflow_runs_workflow_started_idx").on(t.workflow, t.startedAt), c.index("workflow_runs_started_idx").on(t.startedAt)],
  );

  /** Every delivery report a network sent about an outbound message, with its time. */
  const statusReports = c.table(
    "status_reports",
    {
      id: c.text("id").primaryKey(),
      messageId: c.text("message_id").notNull(),
      network: c.text("network").notNull(),
      networkStatus: c.text("network_status").notNull(),
      status: c.text("status", { enum: MESSAGE_STATUSES }).notNull(),
      reportedAt: c.time("reported_at").notNull(),
      receivedAt: c.time("received_at").notNull(),
      applied: c.bool("applied").notNull(),
      error: c.text("error"),
    },
    (t) => [c.index("status_reports_message_idx").on(t.messageId), c.index("status_reports_received_idx").on(t.receivedAt)],
  );

  /** Small values a network driver keeps (BlueBubbles' catch-up cursor). */
  const networkState = c.table(
    "network_state",
    {
      network: c.text("network").notNull(),
      key: c.text("key").notNull(),
      value: c.text("value").notNull(),
    },
    (t) => [c.primaryKey({ columns: [t.network, t.key] })],
  );

  /**
   * Each contact's opt-out, and how many messages it has, kept by a trigger on `messages` (see the migration),
   * so a history page's `total` costs one lookup, not a count over the contact's rows.
   */
  const contacts = c.table(
    "contacts",
    {
      phone: c.text("phone").primaryKey(),
      messages: c.integer("messages").notNull(),
      optedOut: c.bool("opted_out").notNull().default(false),
      optedOutAt: c.time("opted_out_at"),
      /** The contact is typing until then (the network's last report + 60 s). */
      typingUntil: c.time("typing_until"),
      /** Our typing indicator is on until then; the maintenance loop stops it after. */
      ourTypingUntil: c.time("our_typing_until"),
    },
    (t) => [c.index("contacts_our_typing_idx").on(t.ourTypingUntil).where(sql`our_typing_until IS NOT NULL`)],
  );

  /**
   * Lines (src/lines): one sending identity on one network each. `settings` is JSON of the
   * network's non-secret settings; `credentials` JSON of its secrets, sealed (src/secrets)
   * when a SECRET_KEY is set. The environment's line is the row `ln_default` (managed 'env'),
   * written at each start from the environment, its credentials never stored.
   */
  const lines = c.table(
    "lines",
    {
      id: c.text("id").primaryKey(),
      name: c.text("name").notNull().unique(),
      network: c.text("network").notNull(),
      address: c.text("address"),
      enabled: c.bool("enabled").notNull(),
      isDefault: c.bool("is_default").notNull(),
      fallback: c.text("fallback"),
      settings: c.text("settings").notNull(),
      credentials: c.text("credentials"),
      managed: c.text("managed", { enum: LINE_MANAGERS }).notNull(),
      createdAt: c.time("created_at").notNull(),
      updatedAt: c.time("updated_at").notNull(),
    },
    (t) => [c.uniqueIndex("lines_default_uq").on(t.isDefault).where(sql`is_default`)],
  );

  /** Whether a phone has iMessage, as a BlueBubbles server answered (routing's rule 4): kept 7 days. Times in ms. */
  const imessageAvailability = c.table("imessage_availability", {
    phone: c.text("phone").primaryKey(),
    available: c.bool("available").notNull(),
    checkedAt: c.time("checked_at").notNull(),
  });

  /** Leases by name that any process may take (the maintenance leader). */
  const leases = c.table("leases", {
    name: c.text("name").primaryKey(),
    owner: c.text("owner").notNull(),
    until: c.time("until").notNull(),
  });

  /** Where events are pushed (docs/api.md, outbound webhooks). Times in ms. */
  const webhookEndpoints = c.table("webhook_endpoints", {
    id: c.text("id").primaryKey(),
    url: c.text("url").notNull(),
    events: c.list("events"),
    description: c.text("description"),
    enabled: c.bool("enabled").notNull(),
    disabledReason: c.text("disabled_reason", { enum: ENDPOINT_DISABLED_REASONS }),
    secret: c.text("secret").notNull(),
    previousSecret: c.text("previous_secret"),
    previousSecretUntil: c.time("previous_secret_until"),
    failingSince: c.time("failing_since"),
    createdAt: c.time("created_at").notNull(),
    updatedAt: c.time("updated_at").notNull(),
  });

  /**
   * The outbox: one row an event, written in the transaction of the change it reports (by
   * triggers, see the migrations, or `events.append`), with the message's changing fields as
   * they were then and `data`, JSON of what else it carries.
   */
  const events = c.table(
    "events",
    {
      id: c.text("id").primaryKey(),
      type: c.text("type").notNull(),
      timestamp: c.time("timestamp").notNull(),
      messageId: c.text("message_id"),
      status: c.text("status", { enum: MESSAGE_STATUSES }),
      previousStatus: c.text("previous_status", { enum: MESSAGE_STATUSES }),
      error: c.text("error"),
      runId: c.text("run_id"),
      data: c.text("data"),
    },
    (t) => [
      c.uniqueIndex("events_timestamp_uq").on(t.timestamp),
      c.index("events_type_timestamp_idx").on(t.type, t.timestamp),
      c.index("events_run_idx").on(t.runId).where(sql`run_id IS NOT NULL`),
    ],
  );

  /** One event's delivery to one endpoint, with its attempts. Times in ms. */
  const webhookDeliveries = c.table(
    "webhook_deliveries",
    {
      id: c.text("id").primaryKey(),
      endpointId: c.text("endpoint_id").notNull().references(() => webhookEndpoints.id, { onDelete: "cascade" }),
      eventId: c.text("event_id").notNull().references(() => events.id, { onDelete: "cascade" }),
      state: c.text("state", { enum: DELIVERY_STATES }).notNull(),
      attempts: c.integer("attempts").notNull(),
      lastStatus: c.integer("last_status"),
      lastError: c.text("last_error"),
      lastAttemptAt: c.time("last_attempt_at"),
      nextAttemptAt: c.time("next_attempt_at"),
      leaseOwner: c.text("lease_owner"),
      leaseUntil: c.time("lease_until"),
      createdAt: c.time("created_at").notNull(),
      updatedAt: c.time("updated_at").notNull(),
    },
    (t) => [
      c.uniqueIndex("webhook_deliveries_endpoint_event_uq").on(t.endpointId, t.eventId),
      // Only pending rows: the claim's per-endpoint scan, earliest due first.
      c.index("webhook_deliveries_due_idx").on(t.endpointId, t.nextAttemptAt).where(sql`state = 'pending'`),
      c.index("webhook_deliveries_endpoint_created_idx").on(t.endpointId, t.createdAt),
      c.index("webhook_deliveries_event_idx").on(t.eventId),
      // Only settled rows: retention's batches, oldest change first.
      c.index("webhook_deliveries_settled_idx").on(t.updatedAt).where(sql`state <> 'pending'`),
    ],
  );
  return { lines, imessageAvailability, messages, chats, chatMutes, media, reactions, apiKeys, consoleSessions, generations, idempotencyKeys, workflows, workflowState, workflowRuns, statusReports, networkState, contacts, leases, webhookEndpoints, events, webhookDeliveries };
}
