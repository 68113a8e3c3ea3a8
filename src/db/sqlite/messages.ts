import type { Database, Statement } from "bun:sqlite";
import { MESSAGE_STATUSES, statusesBefore, type MessageStatus } from "../../vocabulary/message-status";
import type { PendingMessage } from "../../vocabulary/messages";
import type { ConversationRow, MediaRow, MessageRepository, MessageRow, NewMessage, NewStatusReport, RecordRow } from "../port";
import { bySendAt, newRow } from "../message-rows";
import type { Bindings, Sync } from "./gate";

/** The columns of a message row under their port names. */
const ROW = `id, phone, body, direction, status, timestamp, network, network_id AS networkId, error, updated_at AS updatedAt, opt_out_type AS optOutType,
  reply_to AS replyTo, send_at AS sendAt, media_count AS mediaCount`;
/** What a message record shows (pages read only these: fewer columns, faster pages). */
const RECORD = `id, phone, body, direction, status, timestamp, error, reply_to AS replyTo, send_at AS sendAt, media_count AS mediaCount`;
/** RECORD of the messages table under alias `m`. */
const RECORD_OF_M = `m.id, m.phone, m.body, m.direction, m.status, m.timestamp, m.error, m.reply_to AS replyTo, m.send_at AS sendAt, m.media_count AS mediaCount`;
/** The columns of a media row under their port names. */
const MEDIA = `id, message_id AS messageId, position, content_type AS contentType, size, store_key AS storeKey, created_at AS createdAt`;

type StatusParams = { id: string; status: string; now: number; networkId: string | null; error: string | null };

/**
 * Every query on the messages table, prepared once: plain bun:sqlite statements, since
 * Drizzle's row mapping and transaction wrapper cost more than the queries themselves
 * (bench/results.md). An insert takes SQLite's write lock first (BEGIN IMMEDIATE, or the
 * unit of work's), so timestamps are assigned in commit order even with several processes
 * on one file. `clock` counts microseconds.
 */
export function sqliteMessages(sqlite: Database, clock: () => number): Sync<MessageRepository> {
  const lastTimestamp = sqlite.prepare<{ ts: number | null }, []>("SELECT max(timestamp) AS ts FROM messages");
  const insertRow = sqlite.prepare<never, [Bindings<MessageRow>]>(
    `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type, reply_to, send_at, media_count)
     VALUES ($id, $phone, $body, $direction, $status, $timestamp, $network, $networkId, $error, $updatedAt, $optOutType, $replyTo, $sendAt, $mediaCount)`,
  );
  const insertMedia = sqlite.prepare<never, [Bindings<MediaRow>]>(
    `INSERT INTO media (id, message_id, position, content_type, size, store_key, created_at)
     VALUES ($id, $messageId, $position, $contentType, $size, $storeKey, $createdAt)`,
  );
  const mediaOf = sqlite.prepare<MediaRow, [{ ids: string }]>(
    `SELECT ${MEDIA} FROM media WHERE message_id IN (SELECT value FROM json_each($ids)) ORDER BY message_id, position`,
  );
  const mediaById = sqlite.prepare<MediaRow, [{ id: string }]>(`SELECT ${MEDIA} FROM media WHERE id = $id`);
  // Due: the partial index messages_scheduled_idx holds only scheduled rows, soonest first.
  const anyDue = sqlite.prepare<{ due: number }, [{ now: number }]>(
    `SELECT 1 AS due FROM messages WHERE status = 'scheduled' AND send_at <= $now LIMIT 1`,
  );
  const claimDue = sqlite.prepare<MessageRow, [{ now: number; nowUs: number; limit: number }]>(
    `UPDATE messages SET status = 'queued', updated_at = $nowUs
     WHERE id IN (SELECT id FROM messages WHERE status = 'scheduled' AND send_at <= $now ORDER BY send_at, timestamp LIMIT $limit)
     RETURNING ${ROW}`,
  );
  const cancel = sqlite.prepare<MessageRow, [{ id: string; nowUs: number }]>(
    `UPDATE messages SET status = 'canceled', updated_at = $nowUs WHERE id = $id AND status = 'scheduled' RETURNING ${ROW}`,
  );
  const scheduledPage = sqlite.prepare<RecordRow, [{ limit: number; offset: number }]>(
    `SELECT ${RECORD} FROM messages WHERE status = 'scheduled' ORDER BY send_at, timestamp LIMIT $limit OFFSET $offset`,
  );
  const scheduledTotal = sqlite.prepare<{ n: number }, []>(`SELECT count(*) AS n FROM messages WHERE status = 'scheduled'`);
  const byId = sqlite.prepare<MessageRow, [{ id: string }]>(`SELECT ${ROW} FROM messages WHERE id = $id`);
  const byNetworkId = sqlite.prepare<MessageRow, [{ network: string; direction: string; networkId: string }]>(
    `SELECT ${ROW} FROM messages WHERE network = $network AND direction = $direction AND network_id = $networkId`,
  );
  const historyPage = sqlite.prepare<RecordRow, [{ phone: string; limit: number; offset: number }]>(
    `SELECT ${RECORD} FROM messages WHERE phone = $phone ORDER BY timestamp DESC, id DESC LIMIT $limit OFFSET $offset`,
  );
  // Kept by a trigger on every insert (drizzle/sqlite/0005_contacts.sql).
  const historyTotal = sqlite.prepare<{ n: number }, [{ phone: string }]>("SELECT messages AS n FROM contacts WHERE phone = $phone");
  // Each contact with messages (kept by a trigger) and its newest message, found by
  // messages_phone_timestamp_idx; a plain substring match (instr), as the search is only digits and '+'.
  const conversations = sqlite.prepare<Omit<ConversationRow, "optedOut"> & { optedOut: number }, [{ search: string | null; limit: number }]>(
    `SELECT ${RECORD_OF_M}, c.opted_out AS optedOut
     FROM contacts c
     JOIN messages m ON m.id = (SELECT id FROM messages WHERE phone = c.phone ORDER BY timestamp DESC, id DESC LIMIT 1)
     WHERE c.messages > 0 AND ($search IS NULL OR instr(c.phone, $search) > 0)
     ORDER BY m.timestamp DESC, m.id DESC
     LIMIT $limit`,
  );
  const inboundAfter = sqlite.prepare<RecordRow, [{ since: number; limit: number }]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND timestamp > $since ORDER BY timestamp ASC LIMIT $limit`,
  );
  const inboundFromAfter = sqlite.prepare<RecordRow, [{ phone: string; since: number; limit: number }]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = $phone AND timestamp > $since ORDER BY timestamp ASC LIMIT $limit`,
  );

  // One statement a target status: the status rule (src/vocabulary/message-status.ts) decides which statuses may move to it.
  const moveStatus = Object.fromEntries(
    MESSAGE_STATUSES.map((to) => {
      const from = statusesBefore(to).map((st) => `'${st}'`).join(", ") || "NULL";
      return [
        to,
        sqlite.prepare<never, [StatusParams]>(
          `UPDATE messages SET status = $status, updated_at = $now, network_id = coalesce($networkId, network_id), error = coalesce($error, error)
           WHERE id = $id AND status IN (${from})`,
        ),
      ];
    }),
  ) as Record<MessageStatus, Statement<never, [StatusParams]>>;

  const pendingOutbound = sqlite.prepare<PendingMessage, [{ network: string; checkedBefore: number; since: number; limit: number }]>(
    // createdAt: milliseconds, as networks count time.
    `SELECT id, phone, body AS text, network_id AS networkId, status, timestamp / 1000 AS createdAt FROM messages
     WHERE timestamp > $since AND direction = 'outbound' AND network = $network AND status IN ('queued', 'sent') AND updated_at < $checkedBefore
     ORDER BY updated_at ASC LIMIT $limit`,
  );
  const touch = sqlite.prepare<never, [{ id: string; now: number }]>(
    `UPDATE messages SET updated_at = $now WHERE id = $id AND status IN ('queued', 'sent')`,
  );
  const failStale = sqlite.prepare<never, [{ error: string; now: number; before: number; except: string | null }]>(
    `UPDATE messages SET status = 'failed', error = $error, updated_at = $now
     WHERE status = 'queued' AND updated_at < $before AND ($except IS NULL OR network <> $except)`,
  );
  const insertReport = sqlite.prepare<never, [Bindings<NewStatusReport & { id: string; receivedAt: number }>]>(
    `INSERT INTO status_reports (id, message_id, network, network_status, status, reported_at, received_at, applied, error)
     VALUES ($id, $messageId, $network, $networkStatus, $status, $reportedAt, $receivedAt, $applied, $error)`,
  );

  /**
   * One clock for all messages: after every stored timestamp, at least 1 µs apart. Strictness
   * wins over the wall clock, but SQLite's write rate keeps 1 µs steps far from 1 s ahead.
   */
  const nextTimestamp = () => Math.max(clock(), (lastTimestamp.get()?.ts ?? 0) + 1);

  // Inside the unit of work's transaction this runs as a savepoint (bun:sqlite nests them).
  const insert = sqlite.transaction((message: NewMessage): { row: MessageRow; created: boolean } => {
    if (message.networkId != null) {
      const existing = byNetworkId.get({ network: message.network, direction: message.direction, networkId: message.networkId });
      if (existing) return { row: existing, created: false };
    }
    const timestamp = nextTimestamp();
    const row = newRow(message, timestamp);
    insertRow.run(row);
    if (message.media?.length) {
      const createdAt = Math.floor(timestamp / 1000);
      message.media.forEach((m, position) =>
        insertMedia.run({ id: m.id, messageId: row.id, position, contentType: m.contentType, size: m.size, storeKey: m.storeKey, createdAt }),
      );
    }
    return { row, created: true };
  });

  // One read transaction, so the page and the total agree.
  const readSnapshot = sqlite.transaction((phone: string, limit: number, offset: number) => ({
    rows: historyPage.all({ phone, limit, offset }),
    total: historyTotal.get({ phone })?.n ?? 0,
  }));

  const readScheduled = sqlite.transaction((limit: number, offset: number) => ({
    rows: scheduledPage.all({ limit, offset }),
    total: scheduledTotal.get()?.n ?? 0,
  }));

  const markChecked = sqlite.transaction((ids: string[], now: number) => {
    for (const id of ids) touch.run({ id, now });
  });

  return {
    insert: (message) => insert.immediate(message),

    setStatus: (id, status, patch = {}) =>
      moveStatus[status].run({ id, status, now: clock(), networkId: patch.networkId ?? null, error: patch.error ?? null }).changes > 0,

    get: (id) => byId.get({ id }) ?? undefined,

    byNetworkId: (network, direction, networkId) => byNetworkId.get({ network, direction, networkId }) ?? undefined,

    history: (phone, limit, offset) => readSnapshot(phone, limit, offset),

    conversations: ({ search, limit }) =>
      conversations.all({ search: search ?? null, limit }).map((row) => ({ ...row, optedOut: row.optedOut === 1 })),

    inboundAfter(since, limit, phone) {
      const rows = phone ? inboundFromAfter.all({ phone, since, limit: limit + 1 }) : inboundAfter.all({ since, limit: limit + 1 });
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows, hasMore };
    },

    pendingOutbound(network, afterMs, windowMs, limit) {
      const t = clock();
      return pendingOutbound.all({ network, checkedBefore: t - afterMs * 1000, since: t - windowMs * 1000, limit });
    },

    markChecked: (ids) => markChecked(ids, clock()),

    failStaleQueued(olderThanMs, error, exceptNetwork) {
      const t = clock();
      return failStale.run({ error, now: t, before: t - olderThanMs * 1000, except: exceptNetwork ?? null }).changes;
    },

    mediaOf(messageIds) {
      const found = new Map<string, MediaRow[]>();
      if (messageIds.length === 0) return found;
      for (const m of mediaOf.all({ ids: JSON.stringify(messageIds) })) {
        const list = found.get(m.messageId);
        if (list) list.push(m);
        else found.set(m.messageId, [m]);
      }
      return found;
    },

    media: (id) => mediaById.get({ id }) ?? undefined,

    claimDueScheduled(limit) {
      const t = clock();
      const now = Math.floor(t / 1000);
      if (!anyDue.get({ now })) return [];
      return claimDue.all({ now, nowUs: t, limit }).sort(bySendAt);
    },

    cancelScheduled: (id) => cancel.get({ id, nowUs: clock() }) ?? undefined,

    scheduled: (limit, offset) => readScheduled(limit, offset),

    recordStatusReport(report) {
      insertReport.run({ ...report, id: Bun.randomUUIDv7(), receivedAt: Math.floor(clock() / 1000) });
    },

    newestTimestamp: () => lastTimestamp.get()?.ts ?? 0,
  };
}

