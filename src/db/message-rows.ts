/** Message rows as both dialects build them (src/db/sqlite/messages.ts, src/db/postgres/messages.ts). */
import type { MessageRow, NewMessage } from "./port";

/** The row a new message is stored as. */
export function newRow(message: NewMessage, timestamp: number): MessageRow {
  return {
    id: message.id,
    phone: message.phone,
    body: message.body,
    direction: message.direction,
    status: message.status,
    timestamp,
    network: message.network,
    networkId: message.networkId,
    error: message.error ?? null,
    updatedAt: timestamp,
    optOutType: message.optOutType ?? null,
    replyTo: message.replyTo ?? null,
    sendAt: message.sendAt ?? null,
    mediaCount: message.media?.length ?? 0,
  };
}

/** Soonest `sendAt` first, then in the order they were stored (RETURNING gives no order). */
export const bySendAt = (a: MessageRow, b: MessageRow) => (a.sendAt ?? 0) - (b.sendAt ?? 0) || a.timestamp - b.timestamp;
