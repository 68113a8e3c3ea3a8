/** Every event type, in the order the docs list them. */
export const EVENT_TYPES = ["message.received", "message.status_updated", "workflow.run_failed"] as const;
export type EventType = (typeof EVENT_TYPES)[number];
