import { MESSAGE_STATUSES, statusesBefore, type MessageStatus } from "../vocabulary/message-status";
import type { MessageDirection, OptOutType, PendingMessage } from "../vocabulary/messages";
import type { Reaction } from "../vocabulary/reactions";
import { DEFAULT_LINE_ID } from "../vocabulary/lines";
import { all, changed, choose, count, declare, get, groupBy, page, run, sql, type Sql } from "./sql";

export interface MessageRow {
  id: string;
  phone: string;
  body: string;
  direction: MessageDirection;
  status: MessageStatus;
  timestamp: number;
  network: string;
  /** The network's own id for this message: unique per network and direction. */
  networkId: string | null;
  error: string | null;
  /** µs. */
  updatedAt: number;
  /** Inbound only: the keyword class the network recognised. */
  optOutType: OptOutType | null;
  /** The id of our message this one answers (a threaded reply). */
  replyTo: string | null;
  /** `scheduled` messages: when to send it. */
  sendAt: number | null;
  /** How many media rows the message has: pages read media only for rows with some. */
  mediaCount: number;
  /** How many reactions stand on it (kept by triggers): pages read reactions only for rows with some. */
  reactionCount: number;
  /** ms: when the contact read our message (their network said), or we read theirs; null: not read. */
  readAt: number | null;
  /** ms: the last edit's time; null: never edited. */
  editedAt: number | null;
  editCount: number;
  /** ms: when it was unsent (its body is then empty); null: it stands. */
  unsentAt: number | null;
  /** A group chat's id; null: the direct chat with `phone`. In a group `phone` is the sender, '' for ours. */
  chatId: string | null;
  /** The line it went out or came in on (src/lines). */
  lineId: string;
}

/** What a message record shows (pages read only these columns). */
export type RecordRow = Pick<
  MessageRow,
  "id" | "phone" | "body" | "direction" | "status" | "timestamp" | "error" | "replyTo" | "sendAt" | "mediaCount" | "reactionCount" | "readAt" | "editedAt" | "unsentAt" | "chatId" | "lineId"
>;

/** A conversation as listed: its newest message, whether the contact opted out and how many of its messages we have not read. */
export type ConversationRow = RecordRow & { optedOut: boolean; unread: number };

/** A reaction standing on a message: one a person, theirs (`inbound`, `phone` who) or ours (`outbound`, `phone` ''). */
export interface ReactionRow {
  messageId: string;
  direction: MessageDirection;
  phone: string;
  reaction: Reaction;
  createdAt: number;
}

/** One file of a message; the bytes are in the media store under `storeKey`. */
export interface MediaRow {
  /** `med_` + 32 hex digits. */
  id: string;
  messageId: string;
  /** 0 to 9: the file's place among the message's. */
  position: number;
  contentType: string;
  size: number;
  storeKey: string;
  createdAt: number;
}

/** A file to store with its message: its position is its place in `NewMessage.media`, its time now. */
export type NewMedia = Pick<MediaRow, "id" | "contentType" | "size" | "storeKey">;

/** A message to store; the storage gives it its timestamp, `updatedAt` and `mediaCount`. `sendAt` goes with `scheduled`. */
export type NewMessage = Omit<
  MessageRow,
  "timestamp" | "updatedAt" | "error" | "optOutType" | "replyTo" | "sendAt" | "mediaCount" | "reactionCount" | "readAt" | "editedAt" | "editCount" | "unsentAt" | "chatId" | "lineId"
> & {
  /** Left out: the environment's line (`ln_default`). */
  lineId?: string;
  /** A group chat's id; left out: the direct chat with `phone`. */
  chatId?: string | null;
  error?: string | null;
  optOutType?: OptOutType | null;
  replyTo?: string | null;
  sendAt?: number | null;
  /** Stored with the message, in the same transaction, in this order (at most 10). */
  media?: readonly NewMedia[];
};

/** A delivery report as kept, with whether it moved the message. */
export interface NewStatusReport {
  messageId: string;
  network: string;
  /** The network's own word (Twilio's `undelivered`, …). */
  networkStatus: string;
  status: MessageStatus;
  /** When the network says it happened. */
  reportedAt: number;
  applied: boolean;
  error: string | null;
}

export type StatusPatch = { networkId?: string | null; error?: string | null };

export interface MessageRepository {
  /**
   * Stores a message with the next timestamp of the one clock (max(the clock, the newest + 1 µs),
   * under a lock held to commit), and its `media` with it. With a `networkId` already stored for
   * this network and direction (a unique constraint decides), stores nothing: the stored row, `created: false`.
   */
  insert(message: NewMessage): Promise<{ row: MessageRow; created: boolean }>;
  /**
   * One statement: moves the message to `status` when the status rule (`statusesBefore`)
   * allows it from its current status, and sets `updatedAt`; `networkId` and `error` are set
   * when given. False when the rule refused or no such message exists.
   */
  setStatus(id: string, status: MessageStatus, patch?: StatusPatch): Promise<boolean>;
  get(id: string): Promise<MessageRow | undefined>;
  byNetworkId(network: string, direction: MessageDirection, networkId: string): Promise<MessageRow | undefined>;
  /** One contact's messages (on `line` only, when given), newest first, and how many there are in all, read from one snapshot. */
  history(phone: string, limit: number, offset: number, line?: string): Promise<{ rows: RecordRow[]; total: number }>;
  /**
   * The newest message of each contact with messages (counted by a trigger; messages_phone_timestamp_idx), newest first (ties
   * by id), with its opt-out; only phones containing `search` (a plain substring: it is only digits and '+') when given,
   * and only those whose newest message is on the line `line` (an id) when given.
   */
  conversations(query: { search?: string; limit: number; line?: string }): Promise<ConversationRow[]>;
  /** Inbound messages with `timestamp > since`, oldest first, at most `limit`; `hasMore` when more follow. Direct chats only, unless `every`. */
  inboundAfter(since: number, limit: number, phone?: string, every?: boolean, line?: string): Promise<{ rows: RecordRow[]; hasMore: boolean }>;
  /** A group chat's messages, newest first, and how many there are in all, from one statement. */
  chatHistory(chatId: string, limit: number, offset: number): Promise<{ rows: RecordRow[]; total: number }>;
  /** One statement: the group chat's inbound messages not read yet are read now. How many. */
  readChatInbound(chatId: string): Promise<number>;
  /** Outbound messages of the line `lineId` not final, stored within `windowMs` and unchanged for `afterMs`, least recently checked first. */
  pendingOutbound(lineId: string, afterMs: number, windowMs: number, limit: number): Promise<PendingMessage[]>;
  /** Sets `updatedAt` of these messages (still not final) to now, so the next pass asks about others first. */
  markChecked(ids: string[]): Promise<void>;
  /** One statement: fails outbound messages `queued` for longer than `olderThanMs` with `error`, except those of the lines `exceptLines` (which reconcile); returns the network of each one failed. */
  failStaleQueued(olderThanMs: number, error: string, exceptLines: readonly string[]): Promise<string[]>;
  /** The media of these messages, each message's by position; one without media has no entry. One query. */
  mediaOf(messageIds: readonly string[]): Promise<Map<string, MediaRow[]>>;
  media(id: string): Promise<MediaRow | undefined>;
  /**
   * One statement, safe across processes (PostgreSQL: FOR UPDATE SKIP LOCKED): moves up to
   * `limit` messages `scheduled` with `sendAt` <= now to `queued` (the status trigger writes
   * their events) and returns them, soonest first. The caller that moved a message sends it.
   * On SQLite a read comes first: no write lock when nothing is due.
   */
  claimDueScheduled(limit: number): Promise<MessageRow[]>;
  /** One statement: a `scheduled` message becomes `canceled`. Returns it, or undefined when it is not (any more) scheduled. */
  cancelScheduled(id: string): Promise<MessageRow | undefined>;
  /** The drafts waiting for a person, oldest first, and how many in all, from one statement. */
  drafts(limit: number, offset: number): Promise<{ rows: RecordRow[]; total: number }>;
  /**
   * One statement: a `draft` leaves to `to` (`queued`: approved, to be sent now; `scheduled`:
   * approved before its send_at), with `body` when given (edited). The row then; undefined
   * when it is not (or no longer) a draft, so only one approval wins.
   */
  approveDraft(id: string, to: "queued" | "scheduled", body: string | null): Promise<MessageRow | undefined>;
  /** One statement: a `draft` becomes `rejected` (final). The row then; undefined when it is not a draft. */
  rejectDraft(id: string): Promise<MessageRow | undefined>;
  /** Messages `scheduled`, soonest `sendAt` first, and how many in all, from one snapshot. */
  scheduled(limit: number, offset: number): Promise<{ rows: RecordRow[]; total: number }>;
  /** How many messages are `scheduled`, and how long the longest-due of them is overdue (metrics). */
  scheduledQueue(): Promise<QueueSize>;
  /** Keeps a delivery report; its `receivedAt` is now. */
  recordStatusReport(report: NewStatusReport): Promise<void>;
  /** The newest stored timestamp (µs), 0 when there are no messages. */
  newestTimestamp(): Promise<number>;
  /** One statement (upsert): a person's reaction on the message, replacing theirs. False when it was already this one. */
  react(messageId: string, direction: MessageDirection, phone: string, reaction: Reaction): Promise<boolean>;
  /** One statement: removes a person's reaction (only when it is `reaction`, when given); the one removed. */
  unreact(messageId: string, direction: MessageDirection, phone: string, reaction?: Reaction): Promise<Reaction | undefined>;
  /** The reactions of these messages, each message's oldest first; one without reactions has no entry. One query. */
  reactionsOf(messageIds: readonly string[]): Promise<Map<string, ReactionRow[]>>;
  /**
   * One statement: our messages to `phone` that went out, up to `upTo` (µs) and among the
   * conversation's 200 newest until then, not read yet, are read at `at` (ms). Their ids.
   */
  readOutbound(phone: string, upTo: number, at: number): Promise<string[]>;
  /** One statement: the contact's inbound messages not read yet are read now. How many. */
  readInbound(phone: string): Promise<number>;
  /** How many inbound messages of the contact are not read. */
  unread(phone: string): Promise<number>;
  /** One statement: a message not unsent gets `body` as edited at `at` (ms), once: false when an edit as late or later is applied. */
  edit(id: string, body: string, at: number): Promise<boolean>;
  /** One statement: a message not unsent yet is unsent at `at` (ms), its body emptied. False when it already was. */
  unsend(id: string, at: number): Promise<boolean>;
  /** Our `limit` newest messages to `phone` that went out, newest first. */
  recentOutbound(phone: string, limit: number): Promise<MessageRow[]>;
}

/** A queue's size as metrics show it: its items, and how far behind its most overdue item is (ms by the database's clock, 0 when none is due). */
export interface QueueSize {
  pending: number;
  overdueMs: number;
}

/** A queue's row read as a QueueSize. */
export const queueSize = (r: { pending: number; overdueMs: number | null } | undefined): QueueSize => ({
  pending: Number(r?.pending ?? 0),
  overdueMs: Math.max(0, Number(r?.overdueMs ?? 0)),
});

/** The row a new message is stored as. */
export function newRow(message: NewMessage, timestamp: number): MessageRow {
  return {
    id: message.id,
    phone: message.phone,
    body: message.body,
    direction: message.direction,
    status: message.status,
    timestamp,
    network: message.network,
    networkId: message.networkId,
    error: message.error ?? null,
    updatedAt: timestamp,
    optOutType: message.optOutType ?? null,
    replyTo: message.replyTo ?? null,
    sendAt: message.sendAt ?? null,
    mediaCount: message.media?.length ?? 0,
    reactionCount: 0,
    readAt: null,
    editedAt: null,
    editCount: 0,
    unsentAt: null,
    chatId: message.chatId ?? null,
    lineId: message.lineId ?? DEFAULT_LINE_ID,
  };
}

/** Soonest `sendAt` first, then in the order they were stored (RETURNING gives no order). */
export const bySendAt = (a: MessageRow, b: MessageRow) => (a.sendAt ?? 0) - (b.sendAt ?? 0) || a.timestamp - b.timestamp;

/** The columns of a message row (of alias `m` when given) under their port names. */
export const row = (m = "") =>
  `${m}id, ${m}phone, ${m}body, ${m}direction, ${m}status, ${m}timestamp, ${m}network, ${m}network_id AS "networkId", ${m}error,
   ${m}updated_at AS "updatedAt", ${m}opt_out_type AS "optOutType", ${m}reply_to AS "replyTo", ${m}send_at AS "sendAt", ${m}media_count AS "mediaCount",
   ${m}reaction_count AS "reactionCount", ${m}read_at AS "readAt", ${m}edited_at AS "editedAt", ${m}edit_count AS "editCount", ${m}unsent_at AS "unsentAt", ${m}chat_id AS "chatId", ${m}line_id AS "lineId"`;
const ROW = row();
/** What a message record shows (pages read only these: fewer columns, faster pages), of alias `m` when given. */
export const record = (m = "") =>
  `${m}id, ${m}phone, ${m}body, ${m}direction, ${m}status, ${m}timestamp, ${m}error, ${m}reply_to AS "replyTo", ${m}send_at AS "sendAt", ${m}media_count AS "mediaCount",
   ${m}reaction_count AS "reactionCount", ${m}read_at AS "readAt", ${m}edited_at AS "editedAt", ${m}unsent_at AS "unsentAt", ${m}chat_id AS "chatId", ${m}line_id AS "lineId"`;
/** A direct chat's messages (the spec's per-phone history and poll): not a group's. */
export const DIRECT = "chat_id IS NULL";
/** How many inbound messages of the direct chat with `phone` (an SQL expression) are not read (messages_unread_idx). */
export const unreadOf = (phone: string) => `(SELECT count(*) FROM messages u WHERE u.phone = ${phone} AND u.direction = 'inbound' AND u.read_at IS NULL AND u.${DIRECT})`;
/** How many inbound messages of contact `c` are not read. */
export const UNREAD = unreadOf("c.phone");
const RECORD = record();
const MEDIA = `id, message_id AS "messageId", position, content_type AS "contentType", size, store_key AS "storeKey", created_at AS "createdAt"`;

export const byId = sql<MessageRow>("messages.get", `SELECT ${ROW} FROM messages WHERE id = $id`);
export const byNetworkId = sql<MessageRow>("messages.byNetworkId", `SELECT ${ROW} FROM messages WHERE network = $network AND direction = $direction AND network_id = $networkId`);
/** `$line` null: on every line (the spec's history); else on that line only. */
const ON_LINE = `($line::text IS NULL OR line_id = $line)`;
export const historyPage = `SELECT ${RECORD} FROM messages WHERE phone = $phone AND ${DIRECT} AND ${ON_LINE} ORDER BY timestamp DESC, id DESC LIMIT $limit OFFSET $offset`;
/** A history page's total: on every line the trigger's count (contacts.messages), on one line a count. */
export const historyTotal = `CASE WHEN $line::text IS NULL THEN coalesce((SELECT messages FROM contacts WHERE phone = $phone), 0)
   ELSE (SELECT count(*) FROM messages WHERE phone = $phone AND ${DIRECT} AND line_id = $line) END`;
/** A group chat's page with its total (kept by trigger) in one statement, so both come from one snapshot; an empty page is a row of nulls. */
const chatHistory = sql<RecordRow & { total: number }>("messages.chatHistory", `SELECT c.total, m.* FROM (SELECT coalesce((SELECT messages FROM chats WHERE id = $chatId), 0) AS total) c
   LEFT JOIN (SELECT ${RECORD} FROM messages WHERE chat_id = $chatId ORDER BY timestamp DESC, id DESC LIMIT $limit OFFSET $offset) m ON true
   ORDER BY m.timestamp DESC, m.id DESC`);
export const scheduledPage = `SELECT ${RECORD} FROM messages WHERE status = 'scheduled' ORDER BY send_at, timestamp LIMIT $limit OFFSET $offset`;
/** Poll's four statements: direct chats only or every chat (`all`), from anyone or from `phone`. */
const inboundAfter = (from: boolean, every: boolean) =>
  sql<RecordRow>(
    `messages.inbound${from ? "From" : ""}After${every ? "All" : ""}`,
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' ${from ? "AND phone = $phone" : ""} ${every ? "" : `AND ${DIRECT}`} AND timestamp > $since AND ${ON_LINE}
     ORDER BY timestamp ASC LIMIT $limit`,
  );
const inboundStatements = [inboundAfter(false, false), inboundAfter(true, false), inboundAfter(false, true), inboundAfter(true, true)];
/** One statement a target status: the status rule decides which statuses may move to it. */
const moveStatus = Object.fromEntries(
  MESSAGE_STATUSES.map((to) => [
    to,
    sql(
      `messages.setStatus.${to}`,
      `UPDATE messages SET status = '${to}', updated_at = {now_us}, network_id = coalesce($networkId, network_id), error = coalesce($error, error)
       WHERE id = $id AND status IN (${statusesBefore(to).map((st) => `'${st}'`).join(", ") || "NULL"})`,
    ),
  ]),
) as Record<MessageStatus, Sql>;
const pendingOutbound = sql<PendingMessage>(
  "messages.pendingOutbound",
  // createdAt: milliseconds, as networks count time.
  `SELECT m.id, m.phone, m.body AS text, m.network_id AS "networkId", m.status, m.timestamp / 1000 AS "createdAt", c.network_id AS "chatNetworkId"
   FROM messages m LEFT JOIN chats c ON c.id = m.chat_id
   WHERE m.timestamp > {now_us} - $windowMs::bigint * 1000 AND m.direction = 'outbound' AND m.line_id = $lineId AND m.status IN ('queued', 'sent')
     AND m.updated_at < {now_us} - $afterMs::bigint * 1000
   ORDER BY m.updated_at ASC LIMIT $limit`,
);
const markChecked = sql("messages.markChecked", `UPDATE messages SET updated_at = {now_us} WHERE id = ANY($ids::text[]) AND status IN ('queued', 'sent')`);
const failStale = sql<{ network: string }>("messages.failStaleQueued", `UPDATE messages SET status = 'failed', error = $error, updated_at = {now_us}
   WHERE status = 'queued' AND updated_at < {now_us} - $olderThanMs::bigint * 1000 AND line_id <> ALL($except::text[]) RETURNING network`);
const insertReport = sql("messages.insertReport", `INSERT INTO status_reports (id, message_id, network, network_status, status, reported_at, received_at, applied, error)
   VALUES ($id, $messageId, $network, $networkStatus, $status, $reportedAt, {now_ms}, $applied::boolean, $error)`);
const mediaOf = sql<MediaRow>("messages.mediaOf", `SELECT ${MEDIA} FROM media WHERE message_id = ANY($ids::text[]) ORDER BY message_id, position`);
const mediaById = sql<MediaRow>("messages.media", `SELECT ${MEDIA} FROM media WHERE id = $id`);
const draftsPage = sql<RecordRow & { total: number }>("messages.drafts", `SELECT c.total, m.* FROM (SELECT count(*) AS total FROM messages WHERE status = 'draft') c
   LEFT JOIN (SELECT ${RECORD} FROM messages WHERE status = 'draft' ORDER BY timestamp LIMIT $limit OFFSET $offset) m ON true
   ORDER BY m.timestamp`);
const approveDraft = sql<MessageRow>("messages.approveDraft", `UPDATE messages SET status = $to, body = coalesce($body, body), updated_at = {now_us}
   WHERE id = $id AND status = 'draft' RETURNING ${ROW}`);
const rejectDraft = sql<MessageRow>("messages.rejectDraft", `UPDATE messages SET status = 'rejected', updated_at = {now_us} WHERE id = $id AND status = 'draft' RETURNING ${ROW}`);
const cancel = sql<MessageRow>("messages.cancelScheduled", `UPDATE messages SET status = 'canceled', updated_at = {now_us} WHERE id = $id AND status = 'scheduled' RETURNING ${ROW}`);
const react = sql("messages.react", `INSERT INTO reactions (message_id, direction, phone, reaction, created_at) VALUES ($messageId, $direction, $phone, $reaction, {now_ms})
   ON CONFLICT (message_id, direction, phone) DO UPDATE SET reaction = excluded.reaction, created_at = excluded.created_at
   WHERE reactions.reaction <> excluded.reaction`);
const unreact = sql<{ reaction: Reaction }>(
  "messages.unreact",
  `DELETE FROM reactions WHERE message_id = $messageId AND direction = $direction AND phone = $phone AND ($reaction::text IS NULL OR reaction = $reaction)
   RETURNING reaction`,
);
const reactionsOf = sql<ReactionRow>("messages.reactionsOf", `SELECT message_id AS "messageId", direction, phone, reaction, created_at AS "createdAt" FROM reactions
   WHERE message_id = ANY($ids::text[]) ORDER BY message_id, created_at, direction, phone`);
/** What went out: the statuses a read receipt or an SMS reaction can be about. */
const WENT_OUT = `status IN ('queued', 'sent', 'delivered')`;
const readOutbound = sql<{ id: string }>("messages.readOutbound", `UPDATE messages SET read_at = $at WHERE id IN (
     SELECT id FROM (SELECT id, direction, status, read_at FROM messages WHERE phone = $phone AND ${DIRECT} AND timestamp <= $upTo ORDER BY timestamp DESC LIMIT 200) recent
     WHERE direction = 'outbound' AND read_at IS NULL AND ${WENT_OUT}
   ) RETURNING id`);
const readInbound = sql("messages.readInbound", `UPDATE messages SET read_at = {now_ms} WHERE phone = $phone AND ${DIRECT} AND direction = 'inbound' AND read_at IS NULL`);
const readChatInbound = sql("messages.readChatInbound", `UPDATE messages SET read_at = {now_ms} WHERE chat_id = $chatId AND direction = 'inbound' AND read_at IS NULL`);
const unread = sql<{ n: number }>("messages.unread", `SELECT count(*) AS n FROM messages WHERE phone = $phone AND ${DIRECT} AND direction = 'inbound' AND read_at IS NULL`);
const edit = sql("messages.edit", `UPDATE messages SET body = $body, edited_at = $at, edit_count = edit_count + 1
   WHERE id = $id AND unsent_at IS NULL AND (edited_at IS NULL OR edited_at < $at)`);
const unsend = sql("messages.unsend", `UPDATE messages SET body = '', unsent_at = $at WHERE id = $id AND unsent_at IS NULL`);
const recentOutbound = sql<MessageRow>(
  "messages.recentOutbound",
  `SELECT ${ROW} FROM messages WHERE phone = $phone AND ${DIRECT} AND direction = 'outbound' AND ${WENT_OUT} ORDER BY timestamp DESC LIMIT $limit`,
);
// messages_scheduled_idx holds exactly these rows.
const scheduledQueue = sql<{ pending: number; overdueMs: number | null }>(
  "messages.scheduledQueue",
  `SELECT count(*) AS pending, {now_ms} - min(send_at) AS "overdueMs" FROM messages WHERE status = 'scheduled'`,
);
export const newest = sql<{ ts: number }>("messages.newestTimestamp", `SELECT coalesce(max(timestamp), 0) AS ts FROM messages`);

/** The methods both dialects run alike; the rest (the clock and insert, claims, snapshots) each dialect runs its way. */
export const messages = declare<MessageRepository>()({
  get: get(byId, (id) => ({ id })),
  byNetworkId: get(byNetworkId, (network, direction, networkId) => ({ network, direction, networkId })),
  inboundAfter: all(
    choose(inboundStatements, (_since: number, _limit: number, phone?: string, every?: boolean, _line?: string) => inboundStatements[(phone ? 1 : 0) + (every ? 2 : 0)]!),
    (since: number, limit: number, phone?: string, _every?: boolean, line?: string) => ({ since, limit: limit + 1, phone, line: line ?? null }),
    (rows, [, limit]) => page(rows, limit),
  ),
  chatHistory: all(chatHistory, (chatId, limit, offset) => ({ chatId, limit, offset }), (rows) => ({
    rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...r }) => r),
    total: Number(rows[0]?.total ?? 0),
  })),
  readChatInbound: run(readChatInbound, (chatId) => ({ chatId }), count),
  pendingOutbound: all(pendingOutbound, (lineId, afterMs, windowMs, limit) => ({ lineId, afterMs, windowMs, limit })),
  failStaleQueued: all(failStale, (olderThanMs, error, exceptLines) => ({ olderThanMs, error, except: exceptLines }), (rows) => rows.map((r) => r.network)),
  media: get(mediaById, (id) => ({ id })),
  cancelScheduled: get(cancel, (id) => ({ id })),
  drafts: all(draftsPage, (limit, offset) => ({ limit, offset }), (rows) => ({
    rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...r }) => r),
    total: Number(rows[0]?.total ?? 0),
  })),
  approveDraft: get(approveDraft, (id, to, body) => ({ id, to, body })),
  rejectDraft: get(rejectDraft, (id) => ({ id })),
  recordStatusReport: run(insertReport, (r) => ({ ...r, id: Bun.randomUUIDv7() })),
  scheduledQueue: get(scheduledQueue, () => ({}), queueSize),
  newestTimestamp: get(newest, () => ({}), (r) => Number(r?.ts ?? 0)),
  markChecked: run(markChecked, (ids) => ({ ids })),
  react: run(react, (messageId, direction, phone, reaction) => ({ messageId, direction, phone, reaction }), changed),
  unreact: get(unreact, (messageId, direction, phone, reaction) => ({ messageId, direction, phone, reaction: reaction ?? null }), (r) => r?.reaction),
  reactionsOf: all(reactionsOf, (ids) => ({ ids }), (rows) => groupBy(rows, (r) => r.messageId)),
  readOutbound: all(readOutbound, (phone, upTo, at) => ({ phone, upTo, at }), (rows) => rows.map((r) => r.id)),
  readInbound: run(readInbound, (phone) => ({ phone }), count),
  unread: get(unread, (phone) => ({ phone }), (r) => Number(r?.n ?? 0)),
  edit: run(edit, (id, body, at) => ({ id, body, at }), changed),
  unsend: run(unsend, (id, at) => ({ id, at }), changed),
  recentOutbound: all(recentOutbound, (phone, limit) => ({ phone, limit })),
  mediaOf: all(mediaOf, (ids) => ({ ids }), (rows) => groupBy(rows, (m) => m.messageId)),
  setStatus: run(
    choose(Object.values(moveStatus), (_id: string, status: MessageStatus, _patch?: StatusPatch) => moveStatus[status]),
    (id: string, _status: MessageStatus, patch: StatusPatch = {}) => ({ id, networkId: patch.networkId ?? null, error: patch.error ?? null }),
    (n) => n > 0,
  ),
});
