import type { DeliveryRow, Storage, WebhookEndpointRow, WebhookRepository } from "../db/port";
import { AppError } from "../errors";
import type { Secrets } from "../secrets/seal";
import { isoTime } from "../messages/time";
import type { EventType } from "../vocabulary/events";
import type { DeliveryState } from "../vocabulary/webhooks";
import { endpointUrlProblem, resolvedUrlProblem } from "./safety";

/** How long the secret before a rotation still signs deliveries (docs/webhooks.md). */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;

/** What the endpoint functions need besides their input. */
export interface EndpointDeps {
  storage: Pick<Storage, "webhooks" | "transaction">;
  /** ALLOW_PRIVATE_URLS */
  allowPrivateUrls: boolean;
  /** The key acting (event data's `actor_key_id`). */
  actorKeyId: string | null;
  /** Seals the signing secrets stored (src/secrets). */
  secrets: Pick<Secrets, "seal">;
}

const hex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");

/** A new signing secret: `whsec_` + base64 of 32 random bytes, as Standard Webhooks libraries read it. */
export const newSecret = () => `whsec_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64")}`;

export const toEndpointRecord = (row: WebhookEndpointRow) => ({
  id: row.id,
  url: row.url,
  events: row.events,
  description: row.description,
  enabled: row.enabled,
  disabled_reason: row.disabledReason,
  created_at: isoTime(row.createdAt * 1000),
  updated_at: isoTime(row.updatedAt * 1000),
});

/** The only answers that show the secret: create and rotate-secret. */
const withSecret = (row: WebhookEndpointRow) => ({ ...toEndpointRecord(row), secret: row.secret });

export const toDeliveryRecord = (row: DeliveryRow) => ({
  id: row.id,
  event_id: row.eventId,
  event_type: row.eventType,
  state: row.state,
  attempts: row.attempts,
  last_status: row.lastStatus,
  last_error: row.lastError,
  last_attempt_at: row.lastAttemptAt === null ? null : isoTime(row.lastAttemptAt * 1000),
  next_attempt_at: row.nextAttemptAt === null ? null : isoTime(row.nextAttemptAt * 1000),
  created_at: isoTime(row.createdAt * 1000),
});

/** 400 naming `url` unless it may be called: its form first, then every address its host resolves to. */
async function checkUrl(url: string, allowPrivate: boolean): Promise<void> {
  const problem = endpointUrlProblem(url, allowPrivate) ?? (await resolvedUrlProblem(url, allowPrivate));
  if (problem) throw new AppError("BAD_REQUEST", `url: ${problem}`);
}

const notFound = (id: string) => new AppError("NOT_FOUND", `webhook endpoint ${id} not found`);

async function existing(webhooks: WebhookRepository, id: string): Promise<WebhookEndpointRow> {
  const row = await webhooks.getEndpoint(id);
  if (!row) throw notFound(id);
  return row;
}

/** Stores the change and its admin event (webhook_endpoint.*, with the acting key) in one transaction. */
async function withEvent(
  deps: EndpointDeps,
  type: "webhook_endpoint.created" | "webhook_endpoint.updated" | "webhook_endpoint.deleted",
  change: (webhooks: WebhookRepository) => Promise<WebhookEndpointRow | undefined>,
): Promise<WebhookEndpointRow | undefined> {
  return deps.storage.transaction(async (tx) => {
    const row = await change(tx.webhooks);
    if (row) await tx.events.append(type, { data: { endpoint: toEndpointRecord(row), actor_key_id: deps.actorKeyId } });
    return row;
  });
}

export async function createEndpoint(deps: EndpointDeps, input: { url: string; events?: EventType[]; description?: string }) {
  await checkUrl(input.url, deps.allowPrivateUrls);
  const secret = newSecret();
  // Stored sealed under SECRET_KEY (src/secrets); shown in the clear only now.
  const endpoint = { id: `we_${hex(16)}`, url: input.url, events: input.events ?? null, description: input.description ?? null, secret: deps.secrets.seal(secret) };
  const row = await withEvent(deps, "webhook_endpoint.created", (webhooks) => webhooks.createEndpoint(endpoint));
  return withSecret({ ...row!, secret });
}

/** Oldest first. */
export async function listEndpoints(webhooks: WebhookRepository) {
  return (await webhooks.listEndpoints()).map(toEndpointRecord);
}

export async function getEndpoint(webhooks: WebhookRepository, id: string) {
  return toEndpointRecord(await existing(webhooks, id));
}

export async function updateEndpoint(
  deps: EndpointDeps,
  input: { id: string; url?: string; events?: EventType[] | null; description?: string | null; enabled?: boolean },
) {
  const { id, ...patch } = input;
  const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) as typeof patch;
  if (Object.keys(given).length === 0) throw new AppError("BAD_REQUEST", "body: give at least one of url, events, description, enabled");
  // A missing endpoint is 404 even when the new URL is also wrong.
  await existing(deps.storage.webhooks, id);
  if (given.url !== undefined) await checkUrl(given.url, deps.allowPrivateUrls);
  const row = await withEvent(deps, "webhook_endpoint.updated", (webhooks) => webhooks.updateEndpoint(id, given));
  if (!row) throw notFound(id);
  return toEndpointRecord(row);
}

/** Deletes the endpoint and its deliveries. */
export async function deleteEndpoint(deps: EndpointDeps, id: string): Promise<void> {
  const row = await withEvent(deps, "webhook_endpoint.deleted", async (webhooks) => {
    const found = await webhooks.getEndpoint(id);
    return found && (await webhooks.deleteEndpoint(id)) ? found : undefined;
  });
  if (!row) throw notFound(id);
}

/** A new secret, shown once; the old one still signs (beside it) for 24 h so receivers can switch. */
export async function rotateSecret(deps: { webhooks: WebhookRepository; secrets: Pick<Secrets, "seal"> }, id: string) {
  const secret = newSecret();
  const row = await deps.webhooks.rotateSecret(id, deps.secrets.seal(secret), PREVIOUS_SECRET_MS);
  if (!row) throw notFound(id);
  return withSecret({ ...row, secret });
}

/** Newest first, of one state when given. */
export async function listDeliveries(webhooks: WebhookRepository, input: { id: string; status?: DeliveryState; limit: number }) {
  await existing(webhooks, input.id);
  return (await webhooks.deliveries(input.id, input.limit, input.status)).map(toDeliveryRecord);
}

/** Queues again every event after `since` (µs, exclusive) of the endpoint's types; how many. */
export async function replayEvents(webhooks: WebhookRepository, input: { id: string; since: number }): Promise<number> {
  await existing(webhooks, input.id);
  return webhooks.replay(input.id, input.since);
}

/** One delivery due now, a new series of attempts. */
export async function retryDelivery(webhooks: WebhookRepository, input: { id: string; delivery_id: string }) {
  await existing(webhooks, input.id);
  const row = await webhooks.retryNow(input.id, input.delivery_id);
  if (!row) throw new AppError("NOT_FOUND", `delivery ${input.delivery_id} of webhook endpoint ${input.id} not found`);
  return toDeliveryRecord(row);
}
