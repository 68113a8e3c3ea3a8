import type { z } from "zod";
import type { Storage } from "../db/port";
import { MAX_PAGE } from "../messages/schemas";
import type { eventRecord } from "./schemas";
import type { EventType } from "../vocabulary/events";
import { toEvents } from "./types";

/**
 * Events after `since` (µs, exclusive; omitted: from the oldest kept), oldest first, with
 * poll's cursor rule: pass the last event's timestamp as the next `since`.
 */
export async function listEvents(storage: Pick<Storage, "webhooks" | "messages">, input: { since?: number; type?: EventType; limit: number }) {
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, hasMore } = await storage.webhooks.events(input.since ?? -1, limit, input.type);
  // toEvent's data follows the row's type, which its return type does not say.
  const events = (await toEvents(storage.messages, rows)) as z.infer<typeof eventRecord>[];
  return { events, count: events.length, has_more: hasMore };
}
