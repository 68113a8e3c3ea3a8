import { and, asc, count, desc, eq, gt, inArray, lt, max, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { messages, statusReports, type MessageRow } from "../db/schema";
import { statusesBefore, type MessageStatus } from "./status";

export type NewMessage = Omit<MessageRow, "timestamp" | "updatedAt" | "error"> & { error?: string | null };

const p = <T extends string>(name: T) => sql.placeholder(name);

/**
 * Every query on the messages table, prepared once per database. Writes take SQLite's
 * write lock first (BEGIN IMMEDIATE), so timestamps are assigned in commit order even
 * with several processes on one file: that is the poll cursor guarantee.
 */
export function createMessageStore(db: Db, now: () => number = Date.now) {
  const lastTimestamp = db.select({ ts: max(messages.timestamp) }).from(messages).prepare();
  const insertRow = db.insert(messages).values({
    id: p("id"),
    phone: p("phone"),
    body: p("body"),
    direction: p("direction"),
    status: p("status"),
    timestamp: p("timestamp"),
    network: p("network"),
    networkId: p("networkId"),
    error: p("error"),
    updatedAt: p("updatedAt"),
  }).prepare();
  const byId = db.select().from(messages).where(eq(messages.id, p("id"))).prepare();
  const byNetworkId = db
    .select()
    .from(messages)
    .where(and(eq(messages.network, p("network")), eq(messages.direction, p("direction")), eq(messages.networkId, p("networkId"))))
    .prepare();
  const historyPage = db
    .select()
    .from(messages)
    .where(eq(messages.phone, p("phone")))
    .orderBy(desc(messages.timestamp), desc(messages.id))
    .limit(p("limit"))
    .offset(p("offset"))
    .prepare();
  const historyTotal = db.select({ n: count() }).from(messages).where(eq(messages.phone, p("phone"))).prepare();
  const inboundAfter = db
    .select()
    .from(messages)
    .where(and(eq(messages.direction, "inbound"), gt(messages.timestamp, p("since"))))
    .orderBy(asc(messages.timestamp))
    .limit(p("limit"))
    .prepare();
  const inboundFromAfter = db
    .select()
    .from(messages)
    .where(and(eq(messages.direction, "inbound"), eq(messages.phone, p("phone")), gt(messages.timestamp, p("since"))))
    .orderBy(asc(messages.timestamp))
    .limit(p("limit"))
    .prepare();

  /** One clock for all messages: after every stored timestamp, at least 1 ms apart. */
  const nextTimestamp = () => Math.max(now(), (lastTimestamp.get()?.ts ?? 0) + 1);

  return {
    /**
     * Stores a message with the next timestamp. With a `networkId` already stored for this
     * network and direction, stores nothing and returns the stored row (`created: false`).
     */
    insert(message: NewMessage, inSameTransaction?: (row: MessageRow) => void): { row: MessageRow; created: boolean } {
      return db.transaction(
        () => {
          if (message.networkId != null) {
            const existing = byNetworkId.get({ network: message.network, direction: message.direction, networkId: message.networkId });
            if (existing) return { row: existing, created: false };
          }
          const timestamp = nextTimestamp();
          const row: MessageRow = { ...message, error: message.error ?? null, timestamp, updatedAt: timestamp };
          insertRow.run(row);
          inSameTransaction?.(row);
          return { row, created: true };
        },
        { behavior: "immediate" },
      );
    },

    /** Moves a message to `status` when the status rule allows it; false when it did not. */
    setStatus(id: string, status: MessageStatus, patch: { networkId?: string | null; error?: string | null } = {}): boolean {
      const changed = db
        .update(messages)
        .set({ status, updatedAt: now(), ...patch })
        .where(and(eq(messages.id, id), inArray(messages.status, statusesBefore(status))))
        .returning({ id: messages.id })
        .all();
      return changed.length > 0;
    },

    /**
     * Fails outbound messages left `queued` for longer than `olderThanMs`: their process
     * stopped before the network answered. They are not re-sent, since the network may
     * have taken them; a client retry with its Idempotency-Key sends again.
     */
    failStaleQueued(olderThanMs: number): number {
      return db
        .update(messages)
        .set({ status: "failed", error: "interrupted: the process stopped before the network confirmed the send", updatedAt: now() })
        .where(and(eq(messages.status, "queued"), lt(messages.updatedAt, now() - olderThanMs)))
        .returning({ id: messages.id })
        .all().length;
    },

    /** A message by the network's own id for it. */
    byNetworkId(network: string, direction: MessageRow["direction"], networkId: string): MessageRow | undefined {
      return byNetworkId.get({ network, direction, networkId });
    },

    /** Keeps a delivery report, with whether it moved the message. */
    recordStatusReport(report: Omit<typeof statusReports.$inferInsert, "id" | "receivedAt">): void {
      db.insert(statusReports).values({ ...report, id: Bun.randomUUIDv7(), receivedAt: now() }).run();
    },

    get(id: string): MessageRow | undefined {
      return byId.get({ id });
    },

    /** One contact's messages, newest first, and how many there are in all. */
    history(phone: string, limit: number, offset: number): { rows: MessageRow[]; total: number } {
      return db.transaction(() => ({
        rows: historyPage.all({ phone, limit, offset }),
        total: historyTotal.get({ phone })?.n ?? 0,
      }));
    },

    /** Inbound messages after `since` (exclusive), oldest first; one extra row tells `hasMore`. */
    inboundAfter(since: number, limit: number, phone?: string): { rows: MessageRow[]; hasMore: boolean } {
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
