import { keepTrying, startClaimLoop } from "../background";
import type { Config } from "../config";
import type { AttemptOutcome, ClaimedDelivery, Storage } from "../db/port";
import { toEvents } from "../events/types";
import { errorText, type Logger } from "../log";
import type { Recorder } from "../observability/recorder";
import type { Secrets } from "../secrets/seal";
import { attemptDelivery, type AttemptResult } from "./attempt";

/** Attempts in flight in one process at most. */
const MAX_IN_FLIGHT = 64;
/** Attempts in flight to one endpoint at most, so a slow one holds few of the process's slots. */
const PER_ENDPOINT = 8;
/** One claim takes at most this many of an endpoint, and skips endpoints with more in flight than the rest of the cap. */
const PER_CLAIM = PER_ENDPOINT / 2;
/** Longer than an attempt's 15 s limit, so a lease outlives its attempt. */
const LEASE_MS = 30_000;
/** The wait when nothing was due; an attempt ending cuts it short. */
const IDLE_MS = 500;
/** The longest wait after failed claims (a busy or unreachable database). */
const MAX_CLAIM_BACKOFF_MS = 5_000;
/** An endpoint whose every attempt failed for this long is disabled (`failing`). */
const FAILING_DISABLES_AFTER_MS = 5 * 24 * 60 * 60_000;
/** Up to this fraction is added to each retry delay, so retries of many deliveries spread out. */
const JITTER = 0.1;

export interface Deliverer {
  /** Stops claiming and waits for attempts in flight, at most `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

export interface DelivererDeps {
  storage: Pick<Storage, "webhooks" | "messages">;
  config: Pick<Config, "WEBHOOK_RETRY_SCHEDULE" | "ALLOW_PRIVATE_URLS">;
  log: Logger;
  /** This process, as owner of the leases it takes. */
  owner: string;
  /** Counts attempts by their outcome (absent: not counted). */
  metrics?: Pick<Recorder, "webhookAttempt">;
  /** Opens the endpoints' stored signing secrets (src/secrets). */
  secrets: Pick<Secrets, "open">;
}

/**
 * What an attempt's result makes of its delivery: any 2xx succeeded; 410 failed (the
 * endpoint is gone); otherwise retried `schedule[attempts - 1]` seconds later (plus jitter)
 * while the schedule lasts, then failed. `attemptsBefore`: attempts of the series before this one.
 */
export function outcomeOf(result: AttemptResult, attemptsBefore: number, schedule: readonly number[], random = Math.random): AttemptOutcome {
  const { status, error } = result;
  if (result.ok) return { state: "succeeded", status, error: null };
  const attempts = attemptsBefore + 1;
  if (status === 410 || attempts > schedule.length) return { state: "failed", status, error };
  return { state: "pending", status, error, retryInMs: Math.round(schedule[attempts - 1]! * 1000 * (1 + random() * JITTER)) };
}

/**
 * Delivers due webhook deliveries until stopped: claims them with a lease (so each attempt
 * is made by one process), attempts each concurrently within the global and per-endpoint
 * caps, and records each outcome. Claims again at once while work is due, else waits up to
 * IDLE_MS. Errors are logged, never thrown: a failed claim is retried later.
 */
export function startDeliverer({ storage, config, log, owner, metrics, secrets }: DelivererDeps): Deliverer {
  const perEndpoint = new Map<string, number>();

  const saturated = () => [...perEndpoint].filter(([, n]) => n > PER_ENDPOINT - PER_CLAIM).map(([id]) => id);

  /** One attempt, counted against its endpoint's cap while it runs. */
  const work = async (claimed: ClaimedDelivery) => {
    const endpointId = claimed.endpoint.id;
    perEndpoint.set(endpointId, (perEndpoint.get(endpointId) ?? 0) + 1);
    try {
      await deliver(claimed);
    } finally {
      const left = perEndpoint.get(endpointId)! - 1;
      if (left === 0) perEndpoint.delete(endpointId);
      else perEndpoint.set(endpointId, left);
    }
  };

  const deliver = async ({ delivery, endpoint, event }: ClaimedDelivery) => {
    const [record] = await toEvents(storage.messages, [event]);
    const { id: eventId, ...payload } = record!;
    const keys = { ...endpoint, secret: secrets.open(endpoint.secret), previousSecret: endpoint.previousSecret === null ? null : secrets.open(endpoint.previousSecret) };
    const result = await attemptDelivery(keys, eventId, JSON.stringify(payload), {
      allowPrivate: config.ALLOW_PRIVATE_URLS,
      onRefused: (reason) => log.warn("webhook URL refused", { endpoint: endpoint.id, event: eventId, reason }),
    });
    const outcome = outcomeOf(result, delivery.attempts, config.WEBHOOK_RETRY_SCHEDULE);
    metrics?.webhookAttempt(outcome.state);
    const fields = { endpoint: endpoint.id, event: eventId, delivery: delivery.id, attempt: delivery.attempts + 1 };
    const dlog = log.child(fields);
    if (outcome.state === "pending") {
      dlog.info("webhook attempt failed; will retry", { status: result.status, error: result.error, retry_in_ms: outcome.retryInMs });
    } else if (outcome.state === "failed") {
      dlog.warn("webhook delivery failed; not retried", { status: result.status, error: result.error });
    }
    // The endpoint's health first, so a delivery seen as settled already shows in its endpoint.
    try {
      if (result.ok) {
        if (endpoint.failingSince !== null) await storage.webhooks.markSucceeding(endpoint.id);
      } else if (result.status === 410) {
        await storage.webhooks.disableEndpoint(endpoint.id, "gone");
        dlog.warn("webhook endpoint answered 410 Gone; disabled");
      } else if (await storage.webhooks.markFailing(endpoint.id, FAILING_DISABLES_AFTER_MS)) {
        dlog.warn("webhook endpoint disabled: its deliveries have failed for 5 days");
      }
    } catch (err) {
      dlog.warn("recording the webhook endpoint's health failed", { error: errorText(err) });
    }
    let recorded = false;
    await keepTrying("recording a webhook attempt", async () => {
      recorded = await storage.webhooks.recordAttempt(delivery.id, owner, outcome);
    }, dlog, { giveUpAfterMs: LEASE_MS });
    if (!recorded) dlog.warn("webhook attempt not recorded: its lease ran out, so it will be attempted again");
  };

  const loop = startClaimLoop({
    what: "webhook deliveries",
    log,
    maxInFlight: MAX_IN_FLIGHT,
    idleMs: IDLE_MS,
    maxBackoffMs: MAX_CLAIM_BACKOFF_MS,
    claim: (room) => storage.webhooks.claimDue(owner, LEASE_MS, room, PER_CLAIM, saturated()),
    work,
    describe: (c) => ({ endpoint: c.endpoint.id, event: c.event.id }),
  });

  return {
    async stop(graceMs) {
      const left = await loop.stop(graceMs);
      if (left > 0) log.warn("webhook attempts still in flight at shutdown; their leases will run out and another process will retry them", { count: left });
    },
  };
}
