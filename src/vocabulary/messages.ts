export const MESSAGE_DIRECTIONS = ["inbound", "outbound"] as const;
export type MessageDirection = (typeof MESSAGE_DIRECTIONS)[number];

/** The keyword class a network recognised in an inbound message (Twilio's `OptOutType`). */
export const OPT_OUT_TYPES = ["STOP", "START", "HELP"] as const;
export type OptOutType = (typeof OPT_OUT_TYPES)[number];

/** An outbound message whose final status is not known yet, for a driver's `reconcile`. */
export interface PendingMessage {
  id: string;
  phone: string;
  text: string;
  networkId: string | null;
  status: "queued" | "sent";
  /** When it was stored (ms since the epoch). */
  createdAt: number;
  /** In a group chat: the network's id of the chat (`phone` is then ''); null in a direct chat. */
  chatNetworkId: string | null;
}

/** An idempotency key's row: `pending` while its request runs, `done` once its answer is kept. */
export const IDEMPOTENCY_STATES = ["pending", "done"] as const;
export type IdempotencyState = (typeof IDEMPOTENCY_STATES)[number];
