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
  "message.rerouted",
  "line.created",
  "line.updated",
  "line.deleted",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Events about no message, whose data is stored whole as the change left it (a chat, a line). */
export const DATA_EVENT_TYPES = ["chat.updated", "line.created", "line.updated", "line.deleted"] as const satisfies readonly EventType[];
export type DataEventType = (typeof DATA_EVENT_TYPES)[number];
export const isDataEvent = (type: string): type is DataEventType => (DATA_EVENT_TYPES as readonly string[]).includes(type);
