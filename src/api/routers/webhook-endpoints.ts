import { eventsInput, eventsOutput } from "../../events/schemas";
import { listEvents } from "../../events/service";
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  replayEvents,
  retryDelivery,
  rotateSecret,
  updateEndpoint,
} from "../../webhooks/endpoints";
import {
  createEndpointInput,
  deletedOutput,
  deliveriesInput,
  deliveriesOutput,
  deliveryOutput,
  endpointIdInput,
  endpointOutput,
  endpointsOutput,
  endpointWithSecretOutput,
  replayInput,
  replayOutput,
  retryInput,
  updateEndpointInput,
} from "../../webhooks/schemas";
import { BODY_ERRORS, READ_ERRORS } from "../error-responses";
import { scoped, documentedOnly, router, type Context } from "../trpc";

const tags = ["webhook-endpoints"];

// The error statuses each route answers (src/api/openapi.ts adds the envelope and headers).
const read = READ_ERRORS;
const withBody = BODY_ERRORS;
const NOT_FOUND = { 404: "No webhook endpoint with this id." };

const deps = (ctx: Context) => ({ storage: ctx.app.storage, webhooks: ctx.app.storage.webhooks, allowPrivateUrls: ctx.app.config.ALLOW_PRIVATE_URLS, actorKeyId: ctx.keyId ?? null, secrets: ctx.app.secrets });

/** Outbound webhooks: where Textwire POSTs its events (docs/webhooks.md). */
export const webhookEndpointsRouter = router({
  create: scoped("webhooks:manage")
    .meta({
      successStatus: 201,
      openapi: {
        method: "POST",
        path: "/api/webhook-endpoints",
        tags,
        summary: "Add a webhook endpoint",
        description:
          "Textwire POSTs every event of the types listed (all types when `events` is left out) to `url`, signed with the endpoint's secret (Standard Webhooks). The answer is the only one, with rotate-secret, that shows the secret: store it now.",
        protect: true,
        successDescription: "Created; `endpoint.secret` is shown only here and by rotate-secret.",
        errorResponses: {
          ...withBody,
          400: "Invalid input, the field named: `url` not https, malformed, with credentials, or resolving to a private, loopback or link-local address (unless ALLOW_PRIVATE_URLS=true); `events` empty, unknown or repeated; `description` too long.",
        },
      },
    })
    .input(createEndpointInput)
    .output(endpointWithSecretOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, endpoint: await createEndpoint(deps(ctx), input) })),

  list: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/webhook-endpoints",
        tags,
        summary: "Every webhook endpoint, oldest first",
        description: "Secrets are never listed.",
        protect: true,
        errorResponses: { 401: "", 403: "", 405: "", 429: "", 500: "" },
      },
    })
    .output(endpointsOutput)
    .query(async ({ ctx }) => ({ success: true, endpoints: await listEndpoints(ctx.app.storage.webhooks) })),

  get: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/webhook-endpoints/{id}",
        tags,
        summary: "One webhook endpoint",
        description: "Without its secret.",
        protect: true,
        errorResponses: { ...read, ...NOT_FOUND },
      },
    })
    .input(endpointIdInput)
    .output(endpointOutput)
    .query(async ({ ctx, input }) => ({ success: true, endpoint: await getEndpoint(ctx.app.storage.webhooks, input.id) })),

  update: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "PATCH",
        path: "/api/webhook-endpoints/{id}",
        tags,
        summary: "Change a webhook endpoint",
        description:
          "Changes the fields given (at least one): `url` (checked as on creation), `events` (null: every type), `description` (null removes it), `enabled` (true also clears `disabled_reason`, so an endpoint Textwire disabled gets deliveries again).",
        protect: true,
        errorResponses: { ...withBody, ...NOT_FOUND, 400: "Invalid input, the field named (as on creation), or no field to change." },
      },
    })
    .input(updateEndpointInput)
    .output(endpointOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, endpoint: await updateEndpoint(deps(ctx), input) })),

  delete: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "DELETE",
        path: "/api/webhook-endpoints/{id}",
        tags,
        summary: "Delete a webhook endpoint",
        description: "Deletes it and its deliveries: nothing more is sent to it.",
        protect: true,
        errorResponses: { ...read, ...NOT_FOUND },
      },
    })
    .input(endpointIdInput)
    .output(deletedOutput)
    .mutation(async ({ ctx, input }) => {
      await deleteEndpoint(deps(ctx), input.id);
      return { success: true, deleted: input.id };
    }),

  rotateSecret: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/webhook-endpoints/{id}/rotate-secret",
        tags,
        summary: "Give a webhook endpoint a new secret",
        description:
          "Answers the new secret, shown only here. For 24 hours deliveries carry two signatures, with the new and the old secret, so the receiver can switch without losing one. No body.",
        protect: true,
        successDescription: "The endpoint with its new `secret`.",
        errorResponses: { ...read, ...NOT_FOUND },
      },
    })
    .input(endpointIdInput)
    .output(endpointWithSecretOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, endpoint: await rotateSecret(deps(ctx), input.id) })),

  deliveries: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/webhook-endpoints/{id}/deliveries",
        tags,
        summary: "A webhook endpoint's deliveries, newest first",
        description: "One delivery per event sent to the endpoint: its state, attempts, last status or error and next attempt. Kept 30 days.",
        protect: true,
        errorResponses: { ...read, ...NOT_FOUND, 400: "`status` not pending, succeeded or failed, or `limit` not a whole number from 1 to 100." },
      },
    })
    .input(deliveriesInput)
    .output(documentedOnly(deliveriesOutput))
    .query(async ({ ctx, input }) => {
      const deliveries = await listDeliveries(ctx.app.storage.webhooks, input);
      return { success: true, deliveries, count: deliveries.length };
    }),

  replay: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/webhook-endpoints/{id}/replay",
        tags,
        summary: "Send a webhook endpoint every event since a time again",
        description:
          "Queues again, due now, every event after `since` of the types the endpoint subscribes to (events are kept 30 days), each as a new series of attempts with the same `webhook-id`. Receivers deduplicate by it.",
        protect: true,
        errorResponses: { ...withBody, ...NOT_FOUND, 400: "`since` missing or not an ISO 8601 date-time." },
      },
    })
    .input(replayInput)
    .output(replayOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, queued: await replayEvents(ctx.app.storage.webhooks, input) })),

  retry: scoped("webhooks:manage")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/webhook-endpoints/{id}/deliveries/{delivery_id}/retry",
        tags,
        summary: "Retry one delivery now",
        description: "The delivery is due now, a new series of attempts (pending, attempts 0), whatever its state. No body.",
        protect: true,
        errorResponses: { ...read, 404: "No webhook endpoint with this id, or no delivery with this id for it." },
      },
    })
    .input(retryInput)
    .output(deliveryOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, delivery: await retryDelivery(ctx.app.storage.webhooks, input) })),
});

export const eventsRouter = router({
  list: scoped("messages:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/events",
        tags: ["events"],
        summary: "Events, oldest first",
        description:
          "Every event Textwire wrote (kept 30 days), the same that webhook endpoints get: pass the timestamp of the last event you got as the next `since`, as with poll, to read what you missed. Stateless.",
        protect: true,
        errorResponses: { ...read, 400: "`since` is not an ISO 8601 date-time, `type` not an event type, or `limit` not a whole number of at least 1." },
      },
    })
    .input(eventsInput)
    .output(documentedOnly(eventsOutput))
    .query(async ({ ctx, input }) => ({ success: true, ...(await listEvents(ctx.app.storage, input)) })),
});
