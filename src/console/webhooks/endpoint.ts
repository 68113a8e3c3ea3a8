import { useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../../api/router";
import { useTRPC } from "../trpc";

type Outputs = inferRouterOutputs<AppRouter>["webhookEndpoints"];
export type Endpoint = Outputs["list"]["endpoints"][number];
export type Delivery = Outputs["deliveries"]["deliveries"][number];
export type EventType = NonNullable<Endpoint["events"]>[number];

/**
 * What each event type reports (docs/webhooks.md, "Events"). Keyed by the router's own
 * event type, so the compiler says when a type is added or removed; src/events/types.ts
 * is server code and stays out of the browser bundle.
 */
const EVENT_DESCRIPTIONS: Record<EventType, string> = {
  "message.received": "an inbound message was stored",
  "message.rerouted": "a send went through its line's fallback",
  "line.created": "a line was added",
  "line.updated": "a line was changed",
  "line.deleted": "a line was deleted",
  "message.status_updated": "an outbound message's status changed",
  "workflow.run_failed": "a workflow run ended in error or timeout",
  "message.reaction_added": "a reaction was put on a message",
  "message.reaction_removed": "a reaction was taken off a message",
  "message.read": "the contact read one of our messages",
  "message.edited": "a message was edited",
  "message.unsent": "a message was unsent",
  "contact.typing": "a contact started or stopped typing",
  "chat.updated": "a group chat was renamed or its participants changed",
  "message.drafted": "an automated send was held as a draft for a person to approve",
  "message.approved": "a draft was approved and sent",
  "message.rejected": "a draft was rejected (never sent)",
  "chat.mode_changed": "a chat's mode changed (auto, supervised, human)",
  "chat.handoff_requested": "a contact asked for a person (a handoff keyword)",
  "key.created": "an API key was created (by the key named in actor_key_id)",
  "key.revoked": "an API key was revoked",
  "webhook_endpoint.created": "a webhook endpoint was added",
  "webhook_endpoint.updated": "a webhook endpoint was changed",
  "webhook_endpoint.deleted": "a webhook endpoint was deleted",
};

export const EVENT_TYPES = Object.entries(EVENT_DESCRIPTIONS).map(([type, description]) => ({ type, description }));

export const isEventType = (value: unknown): value is EventType => typeof value === "string" && Object.hasOwn(EVENT_DESCRIPTIONS, value);

/** The endpoint's state as the CLI's `webhooks list` words it (src/cli.ts). */
export function endpointState(endpoint: Endpoint): string {
  if (endpoint.enabled) return "Enabled";
  if (endpoint.disabled_reason === "gone") return "Disabled by Textwire: the endpoint answered 410 Gone";
  if (endpoint.disabled_reason === "failing") return "Disabled by Textwire: every delivery failed for 5 days";
  return "Disabled";
}

/** Refreshes the endpoint listing after a change. */
export function useInvalidateEndpoints() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.webhookEndpoints.list.queryKey() });
}

/** Refreshes the deliveries shown after a retry or a replay queued some. */
export function useInvalidateDeliveries() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.webhookEndpoints.deliveries.queryKey() });
}
