import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { tables } from "../tables";

export const { lines, imessageAvailability, messages, chats, chatMutes, media, reactions, apiKeys, consoleSessions, generations, idempotencyKeys, workflows, workflowState,
  workflowRuns, statusReports, networkState, contacts, leases, webhookEndpoints, events, webhookDeliveries } = tables({
  table: sqliteTable,
  text,
  integer,
  time: integer,
  bool: (name: string) => integer(name, { mode: "boolean" }),
  list: (name: string) => text(name, { mode: "json" }),
  index,
  uniqueIndex,
  primaryKey,
});
