/** Every event type, in the order the docs list them. */
export const EVENT_TYPES = [
  "message.received",
  "message.status_updated",
  "workflow.run_failed",
  "message.reaction_added",
  "message.reaction_removed",
  "message.read",
  "message.edited",
  "message.unsent",
  "contact.typing",
  "chat.updated",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
