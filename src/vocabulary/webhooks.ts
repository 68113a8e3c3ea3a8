/** A webhook delivery: `pending` while attempts are due, then `succeeded` or `failed`. */
export const DELIVERY_STATES = ["pending", "succeeded", "failed"] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Why Textwire disabled an endpoint: it answered 410 Gone, or every delivery failed for days. */
export const ENDPOINT_DISABLED_REASONS = ["gone", "failing"] as const;
export type EndpointDisabledReason = (typeof ENDPOINT_DISABLED_REASONS)[number];
