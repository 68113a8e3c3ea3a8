export const OUTBOUND_STATUSES = ["draft", "scheduled", "queued", "sent", "delivered", "failed", "canceled", "rejected"] as const;
/** Every status a message can have: an inbound message is `received`. */
export const MESSAGE_STATUSES = [...OUTBOUND_STATUSES, "received"] as const;
export type MessageStatus = (typeof MESSAGE_STATUSES)[number];

/**
 * The one rule for status changes: a status only moves forward, and `delivered`, `failed`,
 * `canceled` and `received` are final, so a late or out-of-order report never changes them.
 * A `scheduled` message leaves only to `queued` (its time came and one process claimed it)
 * or to `canceled`, and only a `scheduled` message can be canceled. A `draft` (an automated
 * send held for a person) leaves only to `queued` (approved: sent now), `scheduled` (approved
 * before its `send_at`) or `rejected` (final), and only a draft can be rejected: so one
 * approval wins, and a retried one finds no draft.
 */
const RANK: Record<MessageStatus, number> = { draft: -2, scheduled: -1, queued: 0, sent: 1, delivered: 2, failed: 2, canceled: 2, rejected: 2, received: 2 };

export function isFinalStatus(status: MessageStatus): boolean {
  return RANK[status] === 2;
}

export function canMoveTo(from: MessageStatus, to: MessageStatus): boolean {
  if (from === "draft") return to === "queued" || to === "scheduled" || to === "rejected";
  if (from === "scheduled") return to === "queued" || to === "canceled";
  if (to === "canceled" || to === "rejected" || to === "draft") return false;
  return !isFinalStatus(from) && RANK[to] > RANK[from];
}

/** The statuses a message may be in for a change to `to` to apply. */
export function statusesBefore(to: MessageStatus): MessageStatus[] {
  return (Object.keys(RANK) as MessageStatus[]).filter((from) => canMoveTo(from, to));
}
