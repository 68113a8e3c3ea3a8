import { statusesBefore, type MessageStatus } from "../../messages/status";
import type { PendingMessage } from "../../network/driver";
import { MESSAGE_STATUSES } from "../columns";
import type { MessageRepository, MessageRow, NewMessage, RecordRow } from "../port";
import { NOW_MS, NOW_US, statement, type Run, type Statement } from "./sql";

/** The columns of a message row under their port names. */
const ROW = `id, phone, body, direction, status, timestamp, network, network_id AS "networkId", error, updated_at AS "updatedAt", opt_out_type AS "optOutType"`;
/** What a message record shows (pages read only these: fewer columns, faster pages). */
const RECORD = `id, phone, body, direction, status, timestamp, error`;

/**
 * Stores messages in one statement: the one clock (message_clock,
 * drizzle/postgres/0001_clock_and_contacts.sql) moves by as many steps as there are
 * messages, which take its next timestamps in order. The clock's row lock is held to commit,
 * so inserting transactions take timestamps one after the other, in the order they become
 * visible: a poller following `timestamp > cursor` never misses a row committed late. A
 * network id already stored inserts nothing (the unique index decides) and returns no row.
 */
const insert = statement<{ id: string; timestamp: number }>(
  "messages.insert",
  `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
       WITH ORDINALITY AS i(id, phone, body, direction, status, network, network_id, error, opt_out_type, n)
   ), clock AS (
     UPDATE message_clock SET t = greatest(t + $10::bigint, ${NOW_US} + $10::bigint - 1) RETURNING t
   )
   INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type)
   SELECT id, phone, body, direction, status, clock.t - $10 + n, network, network_id, error, clock.t - $10 + n, opt_out_type FROM input, clock
   ON CONFLICT (network, direction, network_id) DO NOTHING
   RETURNING id, timestamp`,
);
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
  `SELECT c.total, m.id, m.phone, m.body, m.direction, m.status, m.timestamp, m.error
   FROM (SELECT coalesce((SELECT messages FROM contacts WHERE phone = $1), 0) AS total) c
   LEFT JOIN LATERAL (
     SELECT ${RECORD} FROM messages WHERE phone = $1 ORDER BY timestamp DESC, id DESC LIMIT $2 OFFSET $3
   ) m ON true
   ORDER BY m.timestamp DESC, m.id DESC`,
);
const inboundAfter = statement<RecordRow>(
  "messages.inboundAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);
const inboundFromAfter = statement<RecordRow>(
  "messages.inboundFromAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = $3 AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);
// One statement a target status: the status rule (src/messages/status.ts) decides which statuses may move to it.
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
    const column = (pick: (m: NewMessage) => string | null | undefined) => messages.map((m) => pick(m) ?? null);
    const { rows } = await run(insert, [
      column((m) => m.id),
      column((m) => m.phone),
      column((m) => m.body),
      column((m) => m.direction),
      column((m) => m.status),
      column((m) => m.network),
      column((m) => m.networkId),
      column((m) => m.error),
      column((m) => m.optOutType),
      messages.length,
    ]);
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
        const row: MessageRow = { ...message, error: message.error ?? null, optOutType: message.optOutType ?? null, timestamp, updatedAt: timestamp };
        return { row, created: true };
      }),
    );
  }

  return {
    insert: batch ? batched(store) : async (message) => (await store([message]))[0]!,

    setStatus: async (id, status, patch = {}) => (await run(moveStatus[status], [id, patch.networkId ?? null, patch.error ?? null])).rowCount === 1,

    get,

    byNetworkId: byNetwork,

    async history(phone, limit, offset) {
      const { rows } = await run(history, [phone, limit, offset]);
      const total = rows[0]?.total ?? 0;
      return { rows: rows[0]?.id == null ? [] : rows.map(({ total: _, ...record }) => record), total };
    },

    async inboundAfter(since, limit, phone) {
      const { rows } = phone ? await run(inboundFromAfter, [since, limit + 1, phone]) : await run(inboundAfter, [since, limit + 1]);
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows, hasMore };
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
 * One message at a time through `store`, which takes many: a message that arrives while a
 * batch is being written waits for the next one (no timer: an idle process writes at once).
 * A batch that fails is retried message by message, so one bad message fails alone.
 */
function batched(store: (messages: NewMessage[]) => Promise<Stored[]>): (message: NewMessage) => Promise<Stored> {
  type Waiting = { message: NewMessage; resolve: (stored: Stored) => void; reject: (err: unknown) => void };
  const waiting: Waiting[] = [];
  let writing = false;

  async function drain() {
    writing = true;
    while (waiting.length > 0) {
      const next = waiting.splice(0, MAX_BATCH);
      try {
        const stored = await store(next.map((w) => w.message));
        next.forEach((w, i) => w.resolve(stored[i]!));
      } catch (err) {
        if (next.length === 1) next[0]!.reject(err);
        else await Promise.all(next.map((w) => store([w.message]).then(([stored]) => w.resolve(stored!), w.reject)));
      }
    }
    writing = false;
  }

  return (message) =>
    new Promise((resolve, reject) => {
      waiting.push({ message, resolve, reject });
      if (!writing) void drain();
    });
}
