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
  "key.created",
  "key.revoked",
  "webhook_endpoint.created",
  "webhook_endpoint.updated",
  "webhook_endpoint.deleted",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Admin actions: their data is the changed record and `actor_key_id`, the key that acted (null: the CLI). */
export const ADMIN_EVENT_TYPES = ["key.created", "key.revoked", "webhook_endpoint.created", "webhook_endpoint.updated", "webhook_endpoint.deleted"] as const;
export type AdminEventType = (typeof ADMIN_EVENT_TYPES)[number];
export const isAdminEvent = (type: string): type is AdminEventType => (ADMIN_EVENT_TYPES as readonly string[]).includes(type);
