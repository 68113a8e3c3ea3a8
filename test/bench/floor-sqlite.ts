/**
 * The floor's store on SQLite (test/bench/floor.ts): bun:sqlite prepared statements with
 * positional parameters, rows read as arrays (`.values()`), and per call the statements of
 * src/db/messages.ts, src/db/sqlite/repositories.ts and src/db/api-keys.ts, no more.
 */
import { openSqlite } from "../../src/db/sqlite/open";
import { microClock } from "../../src/vocabulary/time";
import type { FloorStore, MediaValues, ReactionValues, RecordValues } from "./floor";

/** What a message record shows, in RecordValues order. */
const RECORD = "id, phone, body, direction, status, timestamp, error, reply_to, media_count, send_at, reaction_count, read_at, edited_at, unsent_at, line_id";

/** Opened, migrated and checked as Textwire opens it (src/db/sqlite/open.ts). */
export function openSqliteStore(url: string): FloorStore {
  const db = openSqlite(url);

  const beginWrite = db.prepare("BEGIN IMMEDIATE");
  const beginRead = db.prepare("BEGIN");
  const commit = db.prepare("COMMIT");
  const rollback = db.prepare("ROLLBACK");
  const keyByHash = db.prepare<[string], [string]>("SELECT id FROM api_keys WHERE hash = ?1 AND revoked_at IS NULL");
  const lastTimestamp = db.prepare<[number | null], []>("SELECT max(timestamp) FROM messages");
  const insertRow = db.prepare<never, [string, string, string, string, string, number, string, string | null]>(
    `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULL, ?6, NULL)`,
  );
  const byNetworkId = db.prepare<[string, number], [string, string, string]>(
    "SELECT id, timestamp FROM messages WHERE network = ?1 AND direction = ?2 AND network_id = ?3",
  );
  // Textwire's setStatus to `delivered`: from queued or sent (src/vocabulary/message-status.ts).
  const markDelivered = db.prepare<never, [string, number, string]>(
    `UPDATE messages SET status = 'delivered', updated_at = ?2, network_id = coalesce(?3, network_id), error = coalesce(NULL, error)
     WHERE id = ?1 AND status IN ('queued', 'sent')`,
  );
  const byId = db.prepare<RecordValues, [string]>(`SELECT ${RECORD} FROM messages WHERE id = ?1`);
  const historyPage = db.prepare<RecordValues, [string, number, number]>(
    `SELECT ${RECORD} FROM messages WHERE phone = ?1 AND chat_id IS NULL ORDER BY timestamp DESC, id DESC LIMIT ?2 OFFSET ?3`,
  );
  // Kept by a trigger on every insert (drizzle/sqlite/0005_contacts.sql).
  const historyTotal = db.prepare<[number], [string]>("SELECT messages FROM contacts WHERE phone = ?1");
  const inboundAfter = db.prepare<RecordValues, [number, number]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND chat_id IS NULL AND timestamp > ?1 ORDER BY timestamp ASC LIMIT ?2`,
  );
  const mediaOf = db.prepare<[string, string, string, number], [string]>(
    "SELECT message_id, id, content_type, size FROM media WHERE message_id IN (SELECT value FROM json_each(?1)) ORDER BY message_id, position",
  );
  const reactionsOf = db.prepare<[string, string, string, string, number], [string]>(
    "SELECT message_id, reaction, direction, phone, created_at FROM reactions WHERE message_id IN (SELECT value FROM json_each(?1)) ORDER BY message_id, created_at, direction, phone",
  );
  const optedOut = db.prepare<[number], [string]>("SELECT opted_out FROM contacts WHERE phone = ?1");
  const setOptedOut = db.prepare<never, [string, number, number | null]>(
    `INSERT INTO contacts (phone, messages, opted_out, opted_out_at) VALUES (?1, 0, ?2, ?3)
     ON CONFLICT (phone) DO UPDATE SET opted_out = ?2, opted_out_at = CASE WHEN ?2 THEN coalesce(contacts.opted_out_at, ?3) END`,
  );
  const inboundFromAfter = db.prepare<RecordValues, [number, number, string]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = ?3 AND chat_id IS NULL AND timestamp > ?1 ORDER BY timestamp ASC LIMIT ?2`,
  );

  /** Runs `fn` between `begin` and COMMIT, rolled back when it throws. */
  function inTransaction<T>(begin: typeof beginRead, fn: () => T): T {
    begin.run();
    try {
      const result = fn();
      commit.run();
      return result;
    } catch (err) {
      if (db.inTransaction) rollback.run();
      throw err;
    }
  }

  return {
    keyExists: (hash) => keyByHash.values(hash).length > 0,

    // Under SQLite's write lock: timestamps in commit order, one clock for all messages.
    insert: (id, phone, body, direction, status, networkId) =>
      inTransaction(beginWrite, () => {
        if (networkId !== null) {
          const existing = byNetworkId.values(LOOPBACK, direction, networkId)[0] as [string, number] | undefined;
          if (existing) return { id: existing[0], timestamp: existing[1] };
        }
        const timestamp = Math.max(microClock(), ((lastTimestamp.values()[0]![0] as number | null) ?? 0) + 1);
        insertRow.run(id, phone, body, direction, status, timestamp, LOOPBACK, networkId);
        return { id, timestamp };
      }),

    markDelivered: (id, networkId) => markDelivered.run(id, microClock(), networkId).changes > 0,

    get: (id) => byId.values(id)[0] as RecordValues | undefined,

    // One read transaction, so the page and the total agree (as Textwire reads them).
    history: (phone, limit, offset) =>
      inTransaction(beginRead, () => ({
        rows: historyPage.values(phone, limit, offset) as RecordValues[],
        total: (historyTotal.values(phone)[0]?.[0] as number | undefined) ?? 0,
      })),

    inboundAfter: (since, limit, phone) => (phone === null ? inboundAfter.values(since, limit) : inboundFromAfter.values(since, limit, phone)) as RecordValues[],

    mediaOf(ids) {
      const files = new Map<string, MediaValues[]>();
      for (const [messageId, ...file] of mediaOf.values(JSON.stringify(ids)) as [string, string, string, number][]) {
        files.set(messageId, [...(files.get(messageId) ?? []), file]);
      }
      return files;
    },

    reactionsOf(ids) {
      const standing = new Map<string, ReactionValues[]>();
      for (const [messageId, ...reaction] of reactionsOf.values(JSON.stringify(ids)) as [string, string, string, string, number][]) {
        standing.set(messageId, [...(standing.get(messageId) ?? []), reaction]);
      }
      return standing;
    },

    optedOut: (phone) => optedOut.values(phone)[0]?.[0] === 1,

    setOptedOut: (phone, out) => void setOptedOut.run(phone, out ? 1 : 0, out ? Math.floor(microClock() / 1000) : null),

    close: () => db.close(),
  };
}

const LOOPBACK = "loopback";
