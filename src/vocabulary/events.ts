/** Admin actions: their data is the changed record and `actor_key_id`, the key that acted (null: the CLI). */
export const ADMIN_EVENT_TYPES = [
  "line.created",
  "line.updated",
  "line.deleted",
  "key.created",
  "key.revoked",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.deleted",
] as const;
export type AdminEventType = (typeof ADMIN_EVENT_TYPES)[number];

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
  "message.drafted",
  "message.approved",
  "message.rejected",
  "chat.mode_changed",
  "chat.handoff_requested",
  ...ADMIN_EVENT_TYPES,
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const isAdminEvent = (type: string): type is AdminEventType => (ADMIN_EVENT_TYPES as readonly string[]).includes(type);

/** Events about a chat, their data the chat as the change left it (`chat.updated`) or `{ chat, … }`. */
export const CHAT_EVENT_TYPES = ["chat.updated", "chat.mode_changed", "chat.handoff_requested"] as const satisfies readonly EventType[];
export type ChatEventType = (typeof CHAT_EVENT_TYPES)[number];

/** Events about no message, whose data is stored whole as the change left it (a chat; an admin action's record). */
export type DataEventType = ChatEventType | AdminEventType;
export const isDataEvent = (type: string): type is DataEventType => (CHAT_EVENT_TYPES as readonly string[]).includes(type) || isAdminEvent(type);
