import { z } from "zod";
import { eventType, isoTime } from "../events/schemas";
import { isoInstant, typeError, wholeNumber } from "../messages/schemas";
import { EVENT_TYPES } from "../vocabulary/events";
import { DELIVERY_STATES, ENDPOINT_DISABLED_REASONS } from "../vocabulary/webhooks";

/** Longest endpoint URL and description taken. */
export const MAX_URL_LENGTH = 2048;
export const MAX_DESCRIPTION_LENGTH = 500;
/** Most deliveries one listing returns. */
export const MAX_DELIVERIES_PAGE = 100;

const endpointId = z
  .string(typeError("a string"))
  .min(1, { error: "must not be empty" })
  .meta({ description: "The endpoint's id (`we_…`).", example: "we_3f9c2a7d41b84e0f9a6d2c18e5b7f403" });

const url = z
  .string(typeError("a string"))
  .max(MAX_URL_LENGTH, { error: `must be at most ${MAX_URL_LENGTH} characters` })
  .meta({
    description:
      "Where events are POSTed: an https URL whose host resolves only to public addresses (http, private, loopback and link-local addresses too with ALLOW_PRIVATE_URLS=true).",
    example: "https://example.com/textwire/events",
  });

const EVENTS_TEXT = `The event types sent to this endpoint: ${EVENT_TYPES.join(", ")}.`;
const events = z
  .array(eventType, typeError("an array of event types"))
  .min(1, { error: "must list at least one event type (leave it out for every type)" })
  .superRefine((types, ctx) => {
    const repeated = types.find((t, i) => types.indexOf(t) !== i);
    if (repeated) ctx.addIssue({ code: "custom", message: `must not list ${repeated} twice` });
  })
  .meta({ description: EVENTS_TEXT, example: ["message.received"] });

const description = z
  .string(typeError("a string"))
  .max(MAX_DESCRIPTION_LENGTH, { error: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` })
  .meta({ description: `Your note about the endpoint, at most ${MAX_DESCRIPTION_LENGTH} characters.`, example: "CRM sync" });

export const createEndpointInput = z.object({
  url,
  events: events.meta({ description: `${EVENTS_TEXT} Leave it out for every type, present and future.` }).optional(),
  description: description.optional(),
});

export const endpointIdInput = z.object({ id: endpointId });

export const updateEndpointInput = z.object({
  id: endpointId,
  url: url.optional(),
  events: events.nullable().meta({ description: `${EVENTS_TEXT} null: every type.` }).optional(),
  description: description.nullable().meta({ description: "Your note about the endpoint; null removes it." }).optional(),
  // A literal, not z.boolean(): trpc-to-openapi coerces booleans in place, and "false" would become true.
  enabled: z
    .literal([true, false], { error: "must be true or false" })
    .meta({ description: "false stops deliveries to the endpoint (they wait); true starts them again and clears `disabled_reason`." })
    .optional(),
});

export const deliveriesInput = z.object({
  id: endpointId,
  status: z
    .enum(DELIVERY_STATES, { error: "must be pending, succeeded or failed" })
    .meta({ description: "Only deliveries in this state: pending, succeeded or failed." })
    .optional(),
  limit: wholeNumber(1, { default: 50, max: MAX_DELIVERIES_PAGE, description: `Most deliveries returned, newest first: 1 to ${MAX_DELIVERIES_PAGE}, default 50.` }),
});

export const replayInput = z.object({
  id: endpointId,
  since: isoInstant.meta({
    description:
      "Exclusive: every event after this ISO 8601 date-time (without a zone it is UTC) of the types the endpoint subscribes to is queued again for it.",
    example: "2026-11-21T09:30:00Z",
  }),
});

export const retryInput = z.object({
  id: endpointId,
  delivery_id: z
    .string(typeError("a string"))
    .min(1, { error: "must not be empty" })
    .meta({ description: "The delivery's id (`dlv_…`), as the deliveries listing shows it.", example: "dlv_8d0c5e2f7a9b4c1d8e3f6a0b2c4d6e8f" }),
});

export const endpointRecord = z
  .object({
    id: z.string().meta({ description: "`we_…`" }),
    url: z.string(),
    events: z.array(eventType).nullable().meta({ description: "The event types sent to it; null: every type." }),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z
      .enum(ENDPOINT_DISABLED_REASONS)
      .nullable()
      .meta({ description: "Why Textwire disabled it: `gone` (it answered 410), `failing` (every delivery failed for 5 days); null when enabled or disabled by a client." }),
    created_at: isoTime("When it was created."),
    updated_at: isoTime("When it last changed."),
  })
  .meta({ id: "WebhookEndpoint" });

export const endpointWithSecret = endpointRecord
  .extend({
    secret: z.string().meta({
      description: "The signing secret (`whsec_` + base64 of 32 random bytes). Shown only when created and when rotated: store it now.",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8iB+0Z9SB4w=",
    }),
  })
  .meta({ id: "WebhookEndpointWithSecret" });

export const deliveryRecord = z
  .object({
    id: z.string().meta({ description: "`dlv_…`" }),
    event_id: z.string().meta({ description: "The event (`evt_…`): the `webhook-id` header of every attempt." }),
    event_type: eventType,
    state: z.enum(DELIVERY_STATES).meta({ description: "pending: an attempt is due or will be; succeeded: a 2xx answered; failed: no more attempts (the schedule ran out, or the endpoint answered 410)." }),
    attempts: z.number().int().meta({ description: "Attempts in the current series (a replay or a retry starts a new one)." }),
    last_status: z.number().int().nullable().meta({ description: "HTTP status of the last attempt; null when it got no answer or none was made." }),
    last_error: z.string().nullable().meta({ description: "What went wrong on the last attempt (`HTTP 500`, timeout, connection refused, a blocked address)." }),
    last_attempt_at: isoTime("The last attempt.").nullable(),
    next_attempt_at: isoTime("When the next attempt is due; null once succeeded or failed.").nullable(),
    created_at: isoTime("When the event was queued for this endpoint."),
  })
  .meta({ id: "WebhookDelivery" });

export const endpointOutput = z.object({ success: z.boolean(), endpoint: endpointRecord });
export const endpointWithSecretOutput = z.object({ success: z.boolean(), endpoint: endpointWithSecret });
export const endpointsOutput = z.object({ success: z.boolean(), endpoints: z.array(endpointRecord) });
export const deletedOutput = z.object({ success: z.boolean(), deleted: z.string().meta({ description: "The id of the endpoint deleted." }) });
export const deliveriesOutput = z.object({ success: z.boolean(), deliveries: z.array(deliveryRecord), count: z.number().int() });
export const replayOutput = z.object({
  success: z.boolean(),
  queued: z.number().int().meta({ description: "Deliveries queued again (new or existing), each due now." }),
});
export const deliveryOutput = z.object({ success: z.boolean(), delivery: deliveryRecord });
