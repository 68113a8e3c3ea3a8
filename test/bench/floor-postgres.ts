/**
 * The floor's store on PostgreSQL (test/bench/floor.ts): raw `pg`, a Pool, named prepared
 * statements read as arrays, and per call the round trips of src/db/messages.ts,
 * src/db/postgres/messages.ts and src/db/api-keys.ts, no more. Inserts and status moves are
 * batched as Textwire batches them outside a transaction (its `batched`): those that arrive
 * while one statement is being written go together in the next (up to 200), one move of
 * `message_clock` (inserts) or of `event_clock` (status events) for all of them.
 */
import { batched } from "../../src/db/postgres/messages";
import { openPostgres } from "../../src/db/postgres/open";
import type { FloorStore, MediaValues, ReactionValues, RecordValues } from "./floor";

/** The database's clock in µs, read when evaluated (src/db/sql.ts PG_NOW_US). */
const NOW_US = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;
const RECORD = "id, phone, body, direction, status, timestamp, error, reply_to, media_count, send_at, reaction_count, read_at, edited_at, unsent_at, line_id";

type Query = { name: string; text: string };
const q = (name: string, text: string): Query => ({ name, text });

const KEY_BY_HASH = q("floor.keyByHash", "SELECT id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL");
// The same statement as Textwire's messages.insert: the clock moves by as many steps as there are messages.
const INSERT = q(
  "floor.insert",
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
const BY_NETWORK_ID = q("floor.byNetworkId", "SELECT id, timestamp FROM messages WHERE network = $1 AND direction = $2 AND network_id = $3");
// Textwire's batched setStatus (src/db/postgres/messages.ts): the moves that arrive together in one statement.
const MARK_DELIVERED = q(
  "floor.markDelivered",
  `UPDATE messages m SET status = 'delivered', updated_at = ${NOW_US}, network_id = coalesce(i.network_id, m.network_id)
   FROM unnest($1::text[], $2::text[]) AS i(id, network_id)
   WHERE m.id = i.id AND m.status IN ('queued', 'sent')
   RETURNING m.id`,
);
const BY_ID = q("floor.get", `SELECT ${RECORD} FROM messages WHERE id = $1`);
// The page and the total (kept by a trigger, drizzle/postgres/0001_clock_and_contacts.sql) in one snapshot.
const HISTORY = q(
  "floor.history",
  `SELECT m.id, m.phone, m.body, m.direction, m.status, m.timestamp, m.error, m.reply_to, m.media_count, m.send_at,
     m.reaction_count, m.read_at, m.edited_at, m.unsent_at, m.line_id, c.total
   FROM (SELECT coalesce((SELECT messages FROM contacts WHERE phone = $1), 0) AS total) c
   LEFT JOIN LATERAL (
     SELECT ${RECORD} FROM messages WHERE phone = $1 AND chat_id IS NULL ORDER BY timestamp DESC, id DESC LIMIT $2 OFFSET $3
   ) m ON true
   ORDER BY m.timestamp DESC, m.id DESC`,
);
const INBOUND_AFTER = q(
  "floor.inboundAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND chat_id IS NULL AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);
const INBOUND_FROM_AFTER = q(
  "floor.inboundFromAfter",
  `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = $3 AND chat_id IS NULL AND timestamp > $1 ORDER BY timestamp ASC LIMIT $2`,
);

const MEDIA_OF = q("floor.mediaOf", "SELECT message_id, id, content_type, size FROM media WHERE message_id = ANY($1::text[]) ORDER BY message_id, position");
const REACTIONS_OF = q(
  "floor.reactionsOf",
  "SELECT message_id, reaction, direction, phone, created_at FROM reactions WHERE message_id = ANY($1::text[]) ORDER BY message_id, created_at, direction, phone",
);
const OPTED_OUT = q("floor.optedOut", "SELECT opted_out FROM contacts WHERE phone = $1");
const SET_OPTED_OUT = q(
  "floor.setOptedOut",
  `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES ($1, 0, $2, CASE WHEN $2 THEN floor(extract(epoch FROM now()) * 1000)::bigint END)
   ON CONFLICT (phone) DO UPDATE SET opted_out = $2, opted_out_at = CASE WHEN $2 THEN coalesce(contacts.opted_out_at, EXCLUDED.opted_out_at) END`,
);

type Insert = { id: string; phone: string; body: string; direction: string; status: string; networkId: string | null };
type Stored = { id: string; timestamp: number };

/** A pool opened, migrated and checked as Textwire opens it (src/db/postgres/open.ts). */
export async function openPostgresStore(url: string, poolSize: number): Promise<FloorStore> {
  const pool = await openPostgres(url, poolSize);

  const rows = async <R extends unknown[]>(query: Query, values: unknown[]): Promise<R[]> =>
    (await pool.query<R>({ name: query.name, text: query.text, values, rowMode: "array" })).rows;

  /** One statement for all of `batch`; a network id already stored is read back (only it can conflict). */
  async function store(batch: Insert[]): Promise<Stored[]> {
    const column = (pick: (m: Insert) => string | null) => batch.map(pick);
    const none = batch.map(() => null);
    const inserted = await rows<[string, number]>(INSERT, [
      column((m) => m.id),
      column((m) => m.phone),
      column((m) => m.body),
      column((m) => m.direction),
      column((m) => m.status),
      column(() => LOOPBACK),
      column((m) => m.networkId),
      none,
      none,
      batch.length,
    ]);
    const stamps = new Map(inserted);
    return Promise.all(
      batch.map(async (m) => {
        const timestamp = stamps.get(m.id);
        if (timestamp !== undefined) return { id: m.id, timestamp };
        const existing = (await rows<[string, number]>(BY_NETWORK_ID, [LOOPBACK, m.direction, m.networkId]))[0];
        if (!existing) throw new Error("a conflicting message vanished");
        return { id: existing[0], timestamp: existing[1] };
      }),
    );
  }

  // Written as Textwire writes them (src/db/postgres/messages.ts batched): together while one batch is written.
  const insert = batched(store);
  const deliver = batched(async (moves: { id: string; networkId: string }[]) => {
    const sorted = moves.toSorted((a, b) => (a.id < b.id ? -1 : 1));
    const moved = new Set((await rows<[string]>(MARK_DELIVERED, [sorted.map((m) => m.id), sorted.map((m) => m.networkId)])).map((r) => r[0]));
    return moves.map((m) => moved.has(m.id));
  }, (m) => m.id);

  return {
    keyExists: async (hash) => (await rows(KEY_BY_HASH, [hash])).length > 0,

    insert: (id, phone, body, direction, status, networkId) => insert({ id, phone, body, direction, status, networkId }),

    markDelivered: (id, networkId) => deliver({ id, networkId }),

    get: async (id) => (await rows<RecordValues>(BY_ID, [id]))[0],

    async history(phone, limit, offset) {
      const page = await rows<[...RecordValues, number]>(HISTORY, [phone, limit, offset]);
      const total = page[0]?.[15] ?? 0;
      if (page[0]?.[0] == null) return { rows: [], total };
      for (const row of page) row.pop();
      return { rows: page as unknown as RecordValues[], total };
    },

    inboundAfter: (since, limit, phone) => (phone === null ? rows<RecordValues>(INBOUND_AFTER, [since, limit]) : rows<RecordValues>(INBOUND_FROM_AFTER, [since, limit, phone])),

    async mediaOf(ids) {
      const files = new Map<string, MediaValues[]>();
      for (const [messageId, ...file] of await rows<[string, string, string, number]>(MEDIA_OF, [ids])) files.set(messageId, [...(files.get(messageId) ?? []), file]);
      return files;
    },

    async reactionsOf(ids) {
      const standing = new Map<string, ReactionValues[]>();
      for (const [messageId, ...reaction] of await rows<[string, string, string, string, number]>(REACTIONS_OF, [ids])) {
        standing.set(messageId, [...(standing.get(messageId) ?? []), reaction]);
      }
      return standing;
    },

    optedOut: async (phone) => (await rows<[boolean]>(OPTED_OUT, [phone]))[0]?.[0] === true,

    setOptedOut: async (phone, out) => void (await rows(SET_OPTED_OUT, [phone, out])),

    close: () => pool.end(),
  };
}

const LOOPBACK = "loopback";
