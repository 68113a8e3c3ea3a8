import { MESSAGE_STATUSES, statusesBefore, type MessageStatus } from "../../vocabulary/message-status";
import type { PendingMessage } from "../../vocabulary/messages";
import { bySendAt, newRow } from "../message-rows";
import type { ConversationRow, MediaRow, MessageRepository, MessageRow, NewMessage, RecordRow } from "../port";
import { NOW_MS, NOW_US, statement, type Run, type Statement } from "./sql";

/** The columns of a message row (of alias `m` when given) under their port names. */
const row = (m = "") =>
  `${m}id, ${m}phone, ${m}body, ${m}direction, ${m}status, ${m}timestamp, ${m}network, ${m}network_id AS "networkId", ${m}error, ${m}updated_at AS "updatedAt",
   ${m}opt_out_type AS "optOutType", ${m}reply_to AS "replyTo", ${m}send_at AS "sendAt", ${m}media_count AS "mediaCount"`;
const ROW = row();
/** What a message record shows (pages read only these: fewer columns, faster pages). */
const RECORD = `id, phone, body, direction, status, timestamp, error, reply_to AS "replyTo", send_at AS "sendAt", media_count AS "mediaCount"`;
/** RECORD as read from a subquery `m` that selected it. */
const RECORD_OF_M = `m.id, m.phone, m.body, m.direction, m.status, m.timestamp, m.error, m."replyTo", m."sendAt", m."mediaCount"`;
/** The columns of a media row under their port names. */
const MEDIA = `id, message_id AS "messageId", position, content_type AS "contentType", size, store_key AS "storeKey", created_at AS "createdAt"`;

/**
 * Stores messages in one statement: the one clock (message_clock,
 * drizzle/postgres/0001_clock_and_contacts.sql) moves by as many steps as there are
 * messages, which take its next timestamps in order. The clock's row lock is held to commit,
 * so inserting transactions take timestamps one after the other, in the order they become
 * visible: a poller following `timestamp > cursor` never misses a row committed late. A
 * network id already stored inserts nothing (the unique index decides) and returns no row.
 * The clock moves by $13 steps, the number of messages.
 */
const insertText = (withMedia: boolean) =>
  `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                          $10::text[], $11::bigint[], $12::int[])
       WITH ORDINALITY AS i(id, phone, body, direction, status, network, network_id, error, opt_out_type, reply_to, send_at, media_count, n)
   ), clock AS (
     UPDATE message_clock SET t = greatest(t + $13::bigint, ${NOW_US} + $13::bigint - 1) RETURNING t
   ), stored AS (
     INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type, reply_to, send_at, media_count)
     SELECT id, phone, body, direction, status, clock.t - $13 + n, network, network_id, error, clock.t - $13 + n, opt_out_type, reply_to, send_at, media_count
     FROM input, clock
     ON CONFLICT (network, direction, network_id) DO NOTHING
     RETURNING id, timestamp
   )${
     withMedia
       ? `, files AS (
     INSERT INTO media (id, message_id, position, content_type, size, store_key, created_at)
     SELECT f.id, f.message_id, f.position, f.content_type, f.size, f.store_key, ${NOW_MS}
     FROM unnest($14::text[], $15::text[], $16::int[], $17::text[], $18::bigint[], $19::text[]) AS f(id, message_id, position, content_type, size, store_key)
     JOIN stored ON stored.id = f.message_id
   )`
       : ""
   }
   SELECT id, timestamp FROM stored`;
const insert = statement<{ id: string; timestamp: number }>("messages.insert", insertText(false));
/** The same with the messages' media, stored only for the messages stored (a known network id stores neither). */
const insertWithMedia = statement<{ id: string; timestamp: number }>("messages.insertWithMedia", insertText(true));
/** The most messages one insert statement carries. */
const MAX_BATCH = 200;
const byId = statement<MessageRow>("messages.get", `SELECT ${ROW} FROM messages WHERE id = $1`);
const byNetworkId = statement<MessageRow>(
  "messages.byNetworkId",
  `SELECT ${ROW} FROM messages WHERE network = $1 AND direction = $2 AND network_id = $3`,
);
// One statement, so the page and the total (kept by a trigger, drizzle/postgres/0001_clock_and_contacts.sql)
// come from one snapshot; the total rides on every row, and on a row of nulls when the page is empty.
const history = statement<RecordRow & { total: number }>(
  "messages.history",
  `SELECT c.total, ${RECORD_OF_M}
   FROM (SELECT coalesce((SELECT messages FROM contacts WHERE phone = $1), 0) AS total) c
   LEFT JOIN LATERAL (
     SELECT ${RECORD} FROM messages WHERE phone = $1 ORDER BY timestamp DESC, id DESC LIMIT $2 OFFSET $3
   ) m ON true
   ORDER BY m.timestamp DESC, m.id DESC`,
);
// Each contact with messages (kept by a trigger) and its newest message, found by
// messages_phone_timestamp_idx; a plain substring match (strpos), as the search is only digits and '+'.
const conversations = statement<ConversationRow>(
  "messages.conversations",
  `SELECT ${RECORD_OF_M}, c.opted_out AS "optedOut"
   FROM contacts c
   CROSS JOIN LATERAL (
     SELECT ${RECORD} FROM messages WHERE phone = c.phone ORDER BY timestamp DESC, id DESC LIMIT 1
   ) m
   WHERE c.messages > 0 AND ($1::text IS NULL OR strpos(c.phone, $1) > 0)
   ORDER BY m.timestamp DESC, m.id DESC
   LIMIT $2`,
);
const inboundAfter = statement<RecordRow>(
  "messages.inboundAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);
const inboundFromAfter = statement<RecordRow>(
  "messages.inboundFromAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = $3 AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);
// One statement a target status: the status rule (src/vocabulary/message-status.ts) decides which statuses may move to it.
const moveStatus = Object.fromEntries(
  MESSAGE_STATUSES.map((to) => {
    const from = statusesBefore(to).map((st) => `'${st}'`).join(", ") || "NULL";
    return [
      to,
      statement(
        `messages.setStatus.${to}`,
        `UPDATE messages SET status = '${to}', updated_at = ${NOW_US}, network_id = coalesce($2, network_id), error = coalesce($3, error)
         WHERE id = $1 AND status IN (${from})`,
      ),
    ];
  }),
) as Record<MessageStatus, Statement>;
/** Status moves from several callers in one statement (outside a transaction): each row's allowed statuses given with it. */
const moveStatuses = statement<{ id: string }>(
  "messages.setStatuses",
  `UPDATE messages m SET status = i.status, updated_at = ${NOW_US}, network_id = coalesce(i.network_id, m.network_id), error = coalesce(i.error, m.error)
   FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, status, network_id, error, allowed)
   WHERE m.id = i.id AND m.status = ANY (string_to_array(i.allowed, ','))
   RETURNING m.id`,
);
/** The statuses a move to each status may start from, as moveStatuses takes them. */
const ALLOWED = Object.fromEntries(MESSAGE_STATUSES.map((to) => [to, statusesBefore(to).join(",")])) as Record<MessageStatus, string>;
type Move = { id: string; status: MessageStatus; networkId: string | null; error: string | null };

const pendingOutbound = statement<PendingMessage>(
  "messages.pendingOutbound",
  // createdAt: milliseconds, as networks count time.
  `SELECT id, phone, body AS text, network_id AS "networkId", status, timestamp / 1000 AS "createdAt" FROM messages
   WHERE timestamp > ${NOW_US} - $3::bigint * 1000 AND direction = 'outbound' AND network = $1 AND status IN ('queued', 'sent')
     AND updated_at < ${NOW_US} - $2::bigint * 1000
   ORDER BY updated_at ASC LIMIT $4`,
);
const markChecked = statement(
  "messages.markChecked",
  `UPDATE messages SET updated_at = ${NOW_US} WHERE id = ANY($1) AND status IN ('queued', 'sent')`,
);
const failStale = statement(
  "messages.failStaleQueued",
  `UPDATE messages SET status = 'failed', error = $2, updated_at = ${NOW_US}
   WHERE status = 'queued' AND updated_at < ${NOW_US} - $1::bigint * 1000 AND ($3::text IS NULL OR network <> $3)`,
);
const insertReport = statement(
  "messages.insertReport",
  `INSERT INTO status_reports (id, message_id, network, network_status, status, reported_at, received_at, applied, error)
   VALUES ($1, $2, $3, $4, $5, $6, ${NOW_MS}, $7, $8)`,
);
const mediaOf = statement<MediaRow>(
  "messages.mediaOf",
  `SELECT ${MEDIA} FROM media WHERE message_id = ANY($1::text[]) ORDER BY message_id, position`,
);
const mediaById = statement<MediaRow>("messages.media", `SELECT ${MEDIA} FROM media WHERE id = $1`);
/**
 * Due scheduled messages (the partial index messages_scheduled_idx, soonest first), locked
 * without waiting: rows another claimer holds are skipped, and one it moved and committed
 * meanwhile fails `status = 'scheduled'` when re-checked under the lock.
 */
const claimDue = statement<MessageRow>(
  "messages.claimDueScheduled",
  `WITH due AS (
     SELECT id FROM messages WHERE status = 'scheduled' AND send_at <= ${NOW_MS} ORDER BY send_at, timestamp LIMIT $1 FOR UPDATE SKIP LOCKED
   )
   UPDATE messages m SET status = 'queued', updated_at = ${NOW_US} FROM due WHERE m.id = due.id AND m.status = 'scheduled'
   RETURNING ${row("m.")}`,
);
const cancel = statement<MessageRow>(
  "messages.cancelScheduled",
  `UPDATE messages SET status = 'canceled', updated_at = ${NOW_US} WHERE id = $1 AND status = 'scheduled' RETURNING ${ROW}`,
);
// As history: the page and the total from one statement, the total on every row (a row of nulls when the page is empty).
const scheduled = statement<RecordRow & { total: number }>(
  "messages.scheduled",
  `SELECT c.total, ${RECORD_OF_M}
   FROM (SELECT count(*) AS total FROM messages WHERE status = 'scheduled') c
   LEFT JOIN LATERAL (
     SELECT ${RECORD} FROM messages WHERE status = 'scheduled' ORDER BY send_at, timestamp LIMIT $1 OFFSET $2
   ) m ON true
   ORDER BY m."sendAt", m.timestamp`,
);
const newest = statement<{ ts: number }>("messages.newestTimestamp", `SELECT coalesce(max(timestamp), 0) AS ts FROM messages`);

type Stored = { row: MessageRow; created: boolean };

/**
 * The messages and status_reports tables; every time from the database's clock. Outside a
 * transaction (`batch`), inserts that arrive while one is being written wait and go
 * together in the next statement: one clock move and one commit for all of them, since the
 * clock lets one inserting transaction commit at a time.
 */
export function postgresMessages(run: Run, batch = false): MessageRepository {
  const get = async (id: string) => (await run(byId, [id])).rows[0];
  const byNetwork = async (network: string, direction: string, networkId: string) => (await run(byNetworkId, [network, direction, networkId])).rows[0];

  async function store(messages: NewMessage[]): Promise<Stored[]> {
    const column = <T>(pick: (m: NewMessage) => T | null | undefined) => messages.map((m) => pick(m) ?? null);
    const values: unknown[] = [
      column((m) => m.id),
      column((m) => m.phone),
      column((m) => m.body),
      column((m) => m.direction),
      column((m) => m.status),
      column((m) => m.network),
      column((m) => m.networkId),
      column((m) => m.error),
      column((m) => m.optOutType),
      column((m) => m.replyTo),
      column((m) => m.sendAt),
      messages.map((m) => m.media?.length ?? 0),
      messages.length,
    ];
    const files = messages.flatMap((m) => (m.media ?? []).map((f, position) => ({ ...f, messageId: m.id, position })));
    if (files.length > 0) {
      const field = <K extends keyof (typeof files)[number]>(key: K) => files.map((f) => f[key]);
      values.push(field("id"), field("messageId"), field("position"), field("contentType"), field("size"), field("storeKey"));
    }
    const { rows } = await run(files.length > 0 ? insertWithMedia : insert, values);
    const stamps = new Map(rows.map((r) => [r.id, r.timestamp]));
    return Promise.all(
      messages.map(async (message) => {
        const timestamp = stamps.get(message.id);
        if (timestamp === undefined) {
          // Only a network id can conflict (ids are unique, timestamps come from the clock).
          const existing = await byNetwork(message.network, message.direction, message.networkId!);
          if (!existing) throw new Error("messages.insert: a conflicting message vanished");
          return { row: existing, created: false };
        }
        return { row: newRow(message, timestamp), created: true };
      }),
    );
  }

  /** Moves many messages at once; whether each moved. No two moves in one call are of one message. */
  async function move(moves: Move[]): Promise<boolean[]> {
    if (moves.length === 1) {
      const [m] = moves as [Move];
      return [(await run(moveStatus[m.status], [m.id, m.networkId, m.error])).rowCount === 1];
    }
    // In id order, so two processes' batches lock their rows in one order.
    const sorted = moves.toSorted((a, b) => (a.id < b.id ? -1 : 1));
    const column = <K extends keyof Move>(key: K) => sorted.map((m) => m[key]);
    const { rows } = await run(moveStatuses, [column("id"), column("status"), column("networkId"), column("error"), sorted.map((m) => ALLOWED[m.status])]);
    const moved = new Set(rows.map((r) => r.id));
    return moves.map((m) => moved.has(m.id));
  }
  const moveOne = batch ? batched(move, (m) => m.id) : async (m: Move) => (await move([m]))[0]!;

  return {
    insert: batch ? batched(store) : async (message) => (await store([message]))[0]!,

    // Batched as inserts are: an applied move writes its event under the event clock, held to commit (drizzle/postgres/0002_webhooks.sql).
    setStatus: (id, status, patch = {}) => moveOne({ id, status, networkId: patch.networkId ?? null, error: patch.error ?? null }),

    get,

    byNetworkId: byNetwork,

    async history(phone, limit, offset) {
      const { rows } = await run(history, [phone, limit, offset]);
      const total = rows[0]?.total ?? 0;
      return { rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...record }) => record), total };
    },

    conversations: async ({ search, limit }) => (await run(conversations, [search ?? null, limit])).rows,

    async inboundAfter(since, limit, phone) {
      const { rows } = phone ? await run(inboundFromAfter, [since, limit + 1, phone]) : await run(inboundAfter, [since, limit + 1]);
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows, hasMore };
    },

    async mediaOf(messageIds) {
      const found = new Map<string, MediaRow[]>();
      if (messageIds.length === 0) return found;
      for (const m of (await run(mediaOf, [messageIds])).rows) {
        const list = found.get(m.messageId);
        if (list) list.push(m);
        else found.set(m.messageId, [m]);
      }
      return found;
    },

    media: async (id) => (await run(mediaById, [id])).rows[0],

    claimDueScheduled: async (limit) => (await run(claimDue, [limit])).rows.sort(bySendAt),

    cancelScheduled: async (id) => (await run(cancel, [id])).rows[0],

    async scheduled(limit, offset) {
      const { rows } = await run(scheduled, [limit, offset]);
      const total = rows[0]?.total ?? 0;
      return { rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...record }) => record), total };
    },

    pendingOutbound: async (network, afterMs, windowMs, limit) => (await run(pendingOutbound, [network, afterMs, windowMs, limit])).rows,

    async markChecked(ids) {
      if (ids.length > 0) await run(markChecked, [ids]);
    },

    failStaleQueued: async (olderThanMs, error, exceptNetwork) => (await run(failStale, [olderThanMs, error, exceptNetwork ?? null])).rowCount ?? 0,

    async recordStatusReport(r) {
      await run(insertReport, [Bun.randomUUIDv7(), r.messageId, r.network, r.networkStatus, r.status, r.reportedAt, r.applied, r.error]);
    },

    newestTimestamp: async () => (await run(newest, [])).rows[0]?.ts ?? 0,
  };
}

/**
 * One item at a time through `write`, which takes many: an item that arrives while a batch is
 * being written waits for the next one (no timer: an idle process writes at once). With
 * `key`, two items of one key never go in one batch (the later waits for the next). A batch
 * that fails is retried item by item, so one bad item fails alone.
 */
export function batched<I, O>(write: (items: I[]) => Promise<O[]>, key?: (item: I) => string): (item: I) => Promise<O> {
  type Waiting = { item: I; resolve: (out: O) => void; reject: (err: unknown) => void };
  let waiting: Waiting[] = [];
  let writing = false;

  /** The next batch: at most MAX_BATCH, and with `key` at most one item a key. */
  function take(): Waiting[] {
    if (!key) return waiting.splice(0, MAX_BATCH);
    const keys = new Set<string>();
    const next: Waiting[] = [];
    const later: Waiting[] = [];
    for (const w of waiting) {
      const k = key(w.item);
      if (next.length < MAX_BATCH && !keys.has(k)) {
        keys.add(k);
        next.push(w);
      } else later.push(w);
    }
    waiting = later;
    return next;
  }

  async function drain() {
    writing = true;
    while (waiting.length > 0) {
      const next = take();
      try {
        const out = await write(next.map((w) => w.item));
        next.forEach((w, i) => w.resolve(out[i]!));
      } catch (err) {
        if (next.length === 1) next[0]!.reject(err);
        else await Promise.all(next.map((w) => write([w.item]).then(([out]) => w.resolve(out!), w.reject)));
      }
    }
    writing = false;
  }

  return (item) =>
    new Promise((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!writing) void drain();
    });
}
