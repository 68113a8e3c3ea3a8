import { DEFAULT_LINE_ID } from "../../vocabulary/lines";
import { MESSAGE_STATUSES, statusesBefore, type MessageStatus } from "../../vocabulary/message-status";
import { bySendAt, DIRECT, historyPage, historyTotal, messages, newRow, record, row, scheduledPage, UNREAD } from "../messages";
import type { ConversationRow, MessageRepository, MessageRow, NewMessage, RecordRow } from "../messages";
import { PG_NOW_MS, PG_NOW_US, sql, type Sql } from "../sql";
import { bind, prepare, type Run } from "./sql";

/** RECORD as read from a subquery `m` that selected it. */
const RECORD_OF_M = `m.id, m.phone, m.body, m.direction, m.status, m.timestamp, m.error, m."replyTo", m."sendAt", m."mediaCount",
  m."reactionCount", m."readAt", m."editedAt", m."unsentAt", m."chatId", m."lineId"`;

/**
 * Stores messages in one statement: the one clock (message_clock,
 * drizzle/postgres/0001_clock_and_contacts.sql) moves by as many steps as there are
 * messages, which take its next timestamps in order. The clock's row lock is held to commit,
 * so inserting transactions take timestamps one after the other, in the order they become
 * visible: a poller following `timestamp > cursor` never misses a row committed late. A
 * network id already stored inserts nothing (the unique index decides) and returns no row.
 */
const insertText = (withMedia: boolean) =>
  `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                          $10::text[], $11::bigint[], $12::text[], $13::text[], $14::int[])
       WITH ORDINALITY AS i(id, phone, body, direction, status, network, network_id, error, opt_out_type, reply_to, send_at, chat_id, line_id, media_count, n)
   ), clock AS (
     UPDATE message_clock SET t = greatest(t + $15::bigint, ${PG_NOW_US} + $15::bigint - 1) RETURNING t
   ), stored AS (
     INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type, reply_to, send_at, chat_id, line_id, media_count)
     SELECT id, phone, body, direction, status, clock.t - $15 + n, network, network_id, error, clock.t - $15 + n, opt_out_type, reply_to, send_at, chat_id, line_id, media_count
     FROM input, clock
     ON CONFLICT (network, direction, network_id) DO NOTHING
     RETURNING id, timestamp
   )${
     withMedia
       ? `, files AS (
     INSERT INTO media (id, message_id, position, content_type, size, store_key, created_at)
     SELECT f.id, f.message_id, f.position, f.content_type, f.size, f.store_key, ${PG_NOW_MS}
     FROM unnest($16::text[], $17::text[], $18::int[], $19::text[], $20::bigint[], $21::text[]) AS f(id, message_id, position, content_type, size, store_key)
     JOIN stored ON stored.id = f.message_id
   )`
       : ""
   }
   SELECT id, timestamp FROM stored`;
const insert: Sql<unknown> = { name: "messages.insert", text: insertText(false) };
/** The fields of a new message in the order of the insert's arrays $1…$13. */
const INSERTED = ["id", "phone", "body", "direction", "status", "network", "networkId", "error", "optOutType", "replyTo", "sendAt", "chatId", "lineId"] as const;
/** The same with the messages' media, stored only for the messages stored (a known network id stores neither). */
const insertWithMedia: Sql<unknown> = { name: "messages.insertWithMedia", text: insertText(true) };
const MAX_BATCH = 200;
// One statement, so the page and the total (kept by a trigger, drizzle/postgres/0001_clock_and_contacts.sql)
// come from one snapshot; the total rides on every row, and on a row of nulls when the page is empty.
const history = prepare(sql<RecordRow & { total: number }>("messages.history", `SELECT c.total, ${RECORD_OF_M}
   FROM (SELECT ${historyTotal} AS total) c
   LEFT JOIN LATERAL (${historyPage}) m ON true
   ORDER BY m.timestamp DESC, m.id DESC`));
const scheduled = prepare(sql<RecordRow & { total: number }>("messages.scheduled", `SELECT c.total, ${RECORD_OF_M}
   FROM (SELECT count(*) AS total FROM messages WHERE status = 'scheduled') c
   LEFT JOIN LATERAL (${scheduledPage}) m ON true
   ORDER BY m."sendAt", m.timestamp`));
/** A page and its total read by `history` or `scheduled`. */
const paged = ({ rows }: { rows: (RecordRow & { total: number })[] }) => ({
  rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...r }) => r),
  total: Number(rows[0]?.total ?? 0),
});
const conversations = prepare(sql<ConversationRow>("messages.conversations", `SELECT ${RECORD_OF_M}, c.opted_out AS "optedOut", ${UNREAD} AS unread
   FROM contacts c
   CROSS JOIN LATERAL (SELECT ${record()} FROM messages WHERE phone = c.phone AND ${DIRECT} ORDER BY timestamp DESC, id DESC LIMIT 1) m
   WHERE c.messages > 0 AND ($search::text IS NULL OR strpos(c.phone, $search) > 0) AND ($line::text IS NULL OR m."lineId" = $line)
   ORDER BY m.timestamp DESC, m.id DESC
   LIMIT $limit`));
/**
 * Due scheduled messages (the partial index messages_scheduled_idx, soonest first), locked
 * without waiting: rows another claimer holds are skipped, and one it moved and committed
 * meanwhile fails `status = 'scheduled'` when re-checked under the lock.
 */
const claimDue = prepare(sql<MessageRow>("messages.claimDueScheduled", `WITH due AS (
     SELECT id FROM messages WHERE status = 'scheduled' AND send_at <= {now_ms} ORDER BY send_at, timestamp LIMIT $limit FOR UPDATE SKIP LOCKED
   )
   UPDATE messages m SET status = 'queued', updated_at = {now_us} FROM due WHERE m.id = due.id AND m.status = 'scheduled'
   RETURNING ${row("m.")}`));
/** Status moves from several callers in one statement (outside a transaction): each row's allowed statuses given with it. */
const moveStatuses: Sql<unknown> = {
  name: "messages.setStatuses",
  text: `UPDATE messages m SET status = i.status, updated_at = ${PG_NOW_US}, network_id = coalesce(i.network_id, m.network_id), error = coalesce(i.error, m.error)
   FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) AS i(id, status, network_id, error, allowed)
   WHERE m.id = i.id AND m.status = ANY (string_to_array(i.allowed, ','))
   RETURNING m.id`,
};
/** The statuses a move to each status may start from, as moveStatuses takes them. */
const ALLOWED = Object.fromEntries(MESSAGE_STATUSES.map((to) => [to, statusesBefore(to).join(",")])) as Record<MessageStatus, string>;
type Move = { id: string; status: MessageStatus; networkId: string | null; error: string | null };

type Stored = { row: MessageRow; created: boolean };

/**
 * The messages and status_reports tables; every time from the database's clock. Outside a
 * transaction (`batch`), inserts that arrive while one is being written wait and go
 * together in the next statement: one clock move and one commit for all of them, since the
 * clock lets one inserting transaction commit at a time.
 */
export function postgresMessages(run: Run, batch = false): MessageRepository {
  const shared = bind(run, messages);

  async function store(messages: NewMessage[]): Promise<Stored[]> {
    const values: unknown[] = [
      ...INSERTED.map((key) => messages.map((m) => (key === "lineId" ? (m.lineId ?? DEFAULT_LINE_ID) : (m[key] ?? null)))),
      messages.map((m) => m.media?.length ?? 0),
      messages.length,
    ];
    const files = messages.flatMap((m) => (m.media ?? []).map((f, position) => ({ ...f, messageId: m.id, position })));
    if (files.length > 0) {
      const field = <K extends keyof (typeof files)[number]>(key: K) => files.map((f) => f[key]);
      values.push(field("id"), field("messageId"), field("position"), field("contentType"), field("size"), field("storeKey"));
    }
    const { rows } = await run(files.length > 0 ? insertWithMedia : insert, values);
    const stamps = new Map(rows.map((r: { id: string; timestamp: number }) => [r.id, r.timestamp]));
    return Promise.all(
      messages.map(async (message) => {
        const timestamp = stamps.get(message.id);
        if (timestamp === undefined) {
          // Only a network id can conflict (ids are unique, timestamps come from the clock).
          const existing = await shared.byNetworkId(message.network, message.direction, message.networkId!);
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
      return [await shared.setStatus(m.id, m.status, m)];
    }
    // In id order, so two processes' batches lock their rows in one order.
    const sorted = moves.toSorted((a, b) => (a.id < b.id ? -1 : 1));
    const column = <K extends keyof Move>(key: K) => sorted.map((m) => m[key]);
    const { rows } = await run(moveStatuses, [column("id"), column("status"), column("networkId"), column("error"), sorted.map((m) => ALLOWED[m.status])]);
    const moved = new Set(rows.map((r: { id: string }) => r.id));
    return moves.map((m) => moved.has(m.id));
  }
  const moveOne = batch ? batched(move, (m) => m.id) : async (m: Move) => (await move([m]))[0]!;

  return {
    ...shared,
    insert: batch ? batched(store) : async (message) => (await store([message]))[0]!,
    // Batched as inserts are: an applied move writes its event under the event clock, held to commit (drizzle/postgres/0002_webhooks.sql).
    setStatus: (id, status, patch = {}) => moveOne({ id, status, networkId: patch.networkId ?? null, error: patch.error ?? null }),
    history: async (phone, limit, offset, line) => paged(await history(run, { phone, limit, offset, line: line ?? null })),
    scheduled: async (limit, offset) => paged(await scheduled(run, { limit, offset })),
    conversations: async ({ search, limit, line }) => (await conversations(run, { search: search ?? null, limit, line: line ?? null })).rows,
    claimDueScheduled: async (limit) => (await claimDue(run, { limit })).rows.sort(bySendAt),
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
