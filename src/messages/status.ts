export const OUTBOUND_STATUSES = ["queued", "sent", "delivered", "failed"] as const;
export type MessageStatus = (typeof OUTBOUND_STATUSES)[number] | "received";

/**
 * The one rule for status changes: a status only moves forward, and `delivered` and
 * `failed` are final, so a late or out-of-order report never changes them.
 */
const RANK: Record<MessageStatus, number> = { queued: 0, sent: 1, delivered: 2, failed: 2, received: 2 };

export function isFinalStatus(status: MessageStatus): boolean {
  return RANK[status] === 2;
}

export function canMoveTo(from: MessageStatus, to: MessageStatus): boolean {
  return !isFinalStatus(from) && RANK[to] > RANK[from];
}

/** The statuses a message may be in for a change to `to` to apply. */
export function statusesBefore(to: MessageStatus): MessageStatus[] {
  return (Object.keys(RANK) as MessageStatus[]).filter((from) => canMoveTo(from, to));
}
