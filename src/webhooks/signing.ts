import { Webhook } from "standardwebhooks";
import pkg from "../../package.json";
import type { WebhookEndpointRow } from "../db/port";

export const USER_AGENT = `Textwire-Webhooks/${pkg.version}`;

/** The secrets an attempt is signed with: the current one, and the previous one while it is still valid. */
export type SigningKeys = Pick<WebhookEndpointRow, "secret" | "previousSecret" | "previousSecretUntil">;

/**
 * The Standard Webhooks headers of one attempt at `at`: `webhook-id` (the event's id, the same
 * on every attempt), `webhook-timestamp` (Unix seconds of this attempt) and `webhook-signature`
 * (`v1,…`, signed by the standardwebhooks package; after a rotation, with both secrets,
 * space-separated, so a receiver holding either verifies it).
 */
export function deliveryHeaders(keys: SigningKeys, eventId: string, body: string, at: Date): Record<string, string> {
  const secrets = [keys.secret];
  if (keys.previousSecret !== null && keys.previousSecretUntil !== null && keys.previousSecretUntil > at.getTime()) {
    secrets.push(keys.previousSecret);
  }
  return {
    "webhook-id": eventId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(eventId, at, body)).join(" "),
    "content-type": "application/json",
    "user-agent": USER_AGENT,
  };
}
