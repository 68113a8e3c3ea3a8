import type { Statement } from "bun:sqlite";
import { and, eq, lt, ne } from "drizzle-orm";
import type { Db } from "../db/client";
import { messages, statusReports, type MessageRow } from "../db/schema";
import { statusesBefore, type MessageStatus } from "./status";
import { microClock } from "./time";

export type NewMessage = Omit<MessageRow, "timestamp" | "updatedAt" | "error" | "optOutType"> & {
  error?: string | null;
  optOutType?: MessageRow["optOutType"];
};

/** The columns of a message row under their schema names. */
const ROW = `id, phone, body, direction, status, timestamp, network, network_id AS networkId, error, updated_at AS updatedAt, opt_out_type AS optOutType`;
/** What a message record shows (pages read only these: fewer columns, faster pages). */
const RECORD = `id, phone, body, direction, status, timestamp, error`;
export type RecordRow = Pick<MessageRow, "id" | "phone" | "body" | "direction" | "status" | "timestamp" | "error">;

/**
 * Every query on the messages table, prepared once per database. The hot ones are plain
 * bun:sqlite statements: Drizzle's row mapping and transaction wrapper cost more than
 * the queries themselves (see bench/results.md). Writes take SQLite's write lock first
 * (BEGIN IMMEDIATE), so timestamps are assigned in commit order even with several
 * processes on one file: that is the poll cursor guarantee. Times (`now`, timestamps,
 * `updated_at`) are microseconds since the epoch.
 */
export function createMessageStore(db: Db, now: () => number = microClock) {
  const sqlite = db.$client;
  const lastTimestamp = sqlite.prepare<{ ts: number | null }, []>("SELECT max(timestamp) AS ts FROM messages");
  const insertRow = sqlite.prepare<never, [MessageRow]>(
    `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type)
     VALUES ($id, $phone, $body, $direction, $status, $timestamp, $network, $networkId, $error, $updatedAt, $optOutType)`,
  );
  const byId = sqlite.prepare<MessageRow, [{ id: string }]>(`SELECT ${ROW} FROM messages WHERE id = $id`);
  const byNetworkId = sqlite.prepare<MessageRow, [{ network: string; direction: string; networkId: string }]>(
    `SELECT ${ROW} FROM messages WHERE network = $network AND direction = $direction AND network_id = $networkId`,
  );
  const historyPage = sqlite.prepare<RecordRow, [{ phone: string; limit: number; offset: number }]>(
    `SELECT ${RECORD} FROM messages WHERE phone = $phone ORDER BY timestamp DESC, id DESC LIMIT $limit OFFSET $offset`,
  );
  // Kept by a trigger on every insert (drizzle/0005_contacts.sql).
  const historyTotal = sqlite.prepare<{ n: number }, [{ phone: string }]>("SELECT messages AS n FROM contacts WHERE phone = $phone");
  const inboundAfter = sqlite.prepare<RecordRow, [{ since: number; limit: number }]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND timestamp > $since ORDER BY timestamp ASC LIMIT $limit`,
  );
  const inboundFromAfter = sqlite.prepare<RecordRow, [{ phone: string; since: number; limit: number }]>(
    `SELECT ${RECORD} FROM messages WHERE direction = 'inbound' AND phone = $phone AND timestamp > $since ORDER BY timestamp ASC LIMIT $limit`,
  );

  // One statement a target status: the status rule (status.ts) decides which statuses may move to it.
  const moveStatus = Object.fromEntries(
    (["queued", "sent", "delivered", "failed", "received"] as const).map((to) => {
      const from = statusesBefore(to).map((st) => `'${st}'`).join(", ") || "NULL";
      return [
        to,
        sqlite.prepare<never, [{ id: string; status: string; now: number; networkId: string | null; error: string | null }]>(
          `UPDATE messages SET status = $status, updated_at = $now, network_id = coalesce($networkId, network_id), error = coalesce($error, error)
           WHERE id = $id AND status IN (${from})`,
        ),
      ];
    }),
  ) as Record<MessageStatus, Statement<never, [{ id: string; status: string; now: number; networkId: string | null; error: string | null }]>>;

  const pendingOutbound = sqlite.prepare<
    /** createdAt: milliseconds, as networks count time. */
    { id: string; phone: string; text: string; networkId: string | null; status: "queued" | "sent"; createdAt: number },
    [{ network: string; checkedBefore: number; since: number; limit: number }]
  >(
    `SELECT id, phone, body AS text, network_id AS networkId, status, timestamp / 1000 AS createdAt FROM messages
     WHERE timestamp > $since AND direction = 'outbound' AND network = $network AND status IN ('queued', 'sent') AND updated_at < $checkedBefore
     ORDER BY updated_at ASC LIMIT $limit`,
  );
  const touch = sqlite.prepare<never, [{ id: string; now: number }]>(
    `UPDATE messages SET updated_at = $now WHERE id = $id AND status IN ('queued', 'sent')`,
  );


  /**
   * One clock for all messages: after every stored timestamp, at least 1 µs apart. Strictness
   * wins over the wall clock, but SQLite's write rate keeps 1 µs steps far from 1 s ahead.
   */
  const nextTimestamp = () => Math.max(now(), (lastTimestamp.get()?.ts ?? 0) + 1);

  const insert = sqlite.transaction((message: NewMessage, inSameTransaction?: (row: MessageRow) => void) => {
    if (message.networkId != null) {
      const existing = byNetworkId.get({ network: message.network, direction: message.direction, networkId: message.networkId });
      if (existing) return { row: existing, created: false };
    }
    const timestamp = nextTimestamp();
    const row: MessageRow = { ...message, error: message.error ?? null, optOutType: message.optOutType ?? null, timestamp, updatedAt: timestamp };
    insertRow.run(row);
    inSameTransaction?.(row);
    return { row, created: true };
  });

  // One read transaction, so the page and the total agree.
  const readSnapshot = sqlite.transaction((phone: string, limit: number, offset: number) => ({
    rows: historyPage.all({ phone, limit, offset }),
    total: historyTotal.get({ phone })?.n ?? 0,
  }));

  return {
    /**
     * Stores a message with the next timestamp. With a `networkId` already stored for this
     * network and direction, stores nothing and returns the stored row (`created: false`).
     */
    insert(message: NewMessage, inSameTransaction?: (row: MessageRow) => void): { row: MessageRow; created: boolean } {
      return insert.immediate(message, inSameTransaction);
    },

    /** Moves a message to `status` when the status rule allows it; false when it did not. */
    setStatus(id: string, status: MessageStatus, patch: { networkId?: string | null; error?: string | null } = {}): boolean {
      const changed = moveStatus[status].run({ id, status, now: now(), networkId: patch.networkId ?? null, error: patch.error ?? null });
      return changed.changes > 0;
    },

    /**
     * Fails outbound messages left `queued` for longer than `olderThanMs`: their process
     * stopped before the network answered. They are not re-sent, since the network may
     * have taken them; a client retry with its Idempotency-Key sends again.
     */
    failStaleQueued(olderThanMs: number, exceptNetwork?: string): number {
      return db
        .update(messages)
        .set({ status: "failed", error: "interrupted: the process stopped before the network confirmed the send", updatedAt: now() })
        .where(
          and(
            eq(messages.status, "queued"),
            lt(messages.updatedAt, now() - olderThanMs * 1000),
            exceptNetwork === undefined ? undefined : ne(messages.network, exceptNetwork),
          ),
        )
        .returning({ id: messages.id })
        .all().length;
    },

    /**
     * Outbound messages of `network` not final (`queued` or `sent`), stored within `windowMs`
     * and unchanged (or unchecked) for `afterMs`: the ones a reconciliation asks about.
     */
    pendingOutbound(network: string, afterMs: number, windowMs: number, limit: number) {
      const t = now();
      return pendingOutbound.all({ network, checkedBefore: t - afterMs * 1000, since: t - windowMs * 1000, limit });
    },

    /** Notes that these messages were just checked, so the next pass asks about others first. */
    markChecked(ids: string[]): void {
      const t = now();
      sqlite.transaction(() => ids.forEach((id) => touch.run({ id, now: t })))();
    },

    /** A message by the network's own id for it. */
    byNetworkId(network: string, direction: MessageRow["direction"], networkId: string): MessageRow | undefined {
      return byNetworkId.get({ network, direction, networkId }) ?? undefined;
    },

    /** Keeps a delivery report, with whether it moved the message. */
    recordStatusReport(report: Omit<typeof statusReports.$inferInsert, "id" | "receivedAt">): void {
      db.insert(statusReports).values({ ...report, id: Bun.randomUUIDv7(), receivedAt: Math.floor(now() / 1000) }).run();
    },

    get(id: string): MessageRow | undefined {
      return byId.get({ id }) ?? undefined;
    },

    /** One contact's messages, newest first, and how many there are in all. */
    history(phone: string, limit: number, offset: number): { rows: RecordRow[]; total: number } {
      return readSnapshot(phone, limit, offset);
    },

    /** Inbound messages after `since` (exclusive), oldest first; one extra row tells `hasMore`. */
    inboundAfter(since: number, limit: number, phone?: string): { rows: RecordRow[]; hasMore: boolean } {
      const rows = phone
        ? inboundFromAfter.all({ phone, since, limit: limit + 1 })
        : inboundAfter.all({ since, limit: limit + 1 });
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows, hasMore };
    },
  };
}

export type MessageStore = ReturnType<typeof createMessageStore>;
