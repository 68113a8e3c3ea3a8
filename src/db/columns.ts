/** The values of enumerated columns (src/db/tables.ts), so that both dialects store the same words. */
export const MESSAGE_DIRECTIONS = ["inbound", "outbound"] as const;
export const MESSAGE_STATUSES = ["scheduled", "queued", "sent", "delivered", "failed", "canceled", "received"] as const;
export const OPT_OUT_TYPES = ["STOP", "START", "HELP"] as const;
export const IDEMPOTENCY_STATES = ["pending", "done"] as const;
export const RUN_TRIGGERS = ["schedule", "manual"] as const;
export const RUN_STATUSES = ["running", "ok", "error", "timeout"] as const;
export const DELIVERY_STATES = ["pending", "succeeded", "failed"] as const;
export const ENDPOINT_DISABLED_REASONS = ["gone", "failing"] as const;
