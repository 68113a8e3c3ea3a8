/**
 * The value lists of the enumerated text columns, shared by the SQLite and PostgreSQL
 * schemas so both dialects store the same words.
 */
export const MESSAGE_DIRECTIONS = ["inbound", "outbound"] as const;
export const MESSAGE_STATUSES = ["queued", "sent", "delivered", "failed", "received"] as const;
/** An inbound text the network classed as an opt-out keyword. */
export const OPT_OUT_TYPES = ["STOP", "START", "HELP"] as const;
export const IDEMPOTENCY_STATES = ["pending", "done"] as const;
export const RUN_TRIGGERS = ["schedule", "manual"] as const;
export const RUN_STATUSES = ["running", "ok", "error", "timeout"] as const;
