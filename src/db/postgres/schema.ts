import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";
import { tables } from "../tables";

const time = (name: string) => bigint(name, { mode: "number" });

export const { lines, imessageAvailability, messages, chats, chatMutes, media, reactions, apiKeys, consoleSessions, generations, idempotencyKeys, workflows, workflowState,
  workflowRuns, statusReports, networkState, contacts, leases, webhookEndpoints, events, webhookDeliveries } = tables({ table: pgTable, text, integer, time, bool: boolean, list: (name: string) => text(name).array(), index, uniqueIndex, primaryKey });

/**
 * The one clock of message timestamps, one row. Each insert of a message first moves it
 * (`t = greatest(t + 1, clock_timestamp() in µs)`) in its own transaction; the row lock is
 * held to commit, so timestamps increase in the order messages become visible, whichever
 * process writes them.
 */
export const messageClock = pgTable(
  "message_clock",
  {
    id: boolean("id").primaryKey().default(true),
    t: time("t").notNull(),
  },
  (t) => [check("message_clock_one_row", sql`${t.id}`)],
);

/**
 * The one clock of event timestamps, one row, as `message_clock` is for messages: each event
 * moves it (`t = greatest(t + 1, clock_timestamp() in µs)`) and holds its row lock to commit.
 */
export const eventClock = pgTable(
  "event_clock",
  {
    id: boolean("id").primaryKey().default(true),
    t: time("t").notNull(),
  },
  (t) => [check("event_clock_one_row", sql`${t.id}`)],
);
