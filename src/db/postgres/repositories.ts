import { apiKeys } from "../api-keys";
import { chats } from "../chats";
import { contacts } from "../contacts";
import { generations } from "../generations";
import { decision, decisionRow, idempotency, messageStatus } from "../idempotency";
import { leases } from "../leases";
import { lines } from "../lines";
import { networkState } from "../network-state";
import { retention } from "../retention";
import type { Repositories } from "../port";
import { sessions } from "../sessions";
import { sql } from "../sql";
import { appendParams, claimed, DELIVERY_COLUMNS, DUE, NEW_SERIES, toClaimedDelivery, toDeliveryRow, webhooks } from "../webhooks";
import { workflows } from "../workflows";
import { postgresMessages } from "./messages";
import { bind, prepare, type Run } from "./sql";

// What only PostgreSQL runs: claims with FOR UPDATE SKIP LOCKED, a retry read back in one statement.

// Locked without waiting: rows another claimer holds are skipped, one it leased and committed meanwhile fails DUE when
// re-checked under the lock. The outer SELECT reads the leased rows from `claimed`: it cannot see the UPDATE's effects.
const claim = prepare(sql("webhooks.claimDue", `WITH claimed AS (
     UPDATE webhook_deliveries SET lease_owner = $owner, lease_until = {now_ms} + $leaseMs
     WHERE id IN (
       SELECT d.id FROM webhook_deliveries d
       WHERE d.id IN (
         SELECT c.id FROM webhook_endpoints e CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.endpoint_id = e.id AND ${DUE} ORDER BY d.next_attempt_at LIMIT $perEndpoint
         ) c
         WHERE e.enabled AND e.id <> ALL ($skip::text[])
         ORDER BY c.next_attempt_at LIMIT $limit
       ) AND ${DUE}
       FOR UPDATE SKIP LOCKED
     )
     RETURNING *
   )
   ${claimed("claimed")}
   ORDER BY d.next_attempt_at, ev.timestamp`));
const retryNow = prepare(sql("webhooks.retryNow", `WITH d AS (UPDATE webhook_deliveries SET ${NEW_SERIES} WHERE id = $id AND endpoint_id = $endpointId RETURNING *)
   SELECT ${DELIVERY_COLUMNS} FROM d JOIN events ev ON ev.id = d.event_id`));
// The event clock as the triggers' record_event moves it (drizzle/postgres/0002_webhooks.sql), its row lock held to commit.
const appendEvent = prepare(sql("events.append", `WITH clock AS (UPDATE event_clock SET t = greatest(t + 1, {now_us}) RETURNING t)
   INSERT INTO events (id, type, timestamp, message_id, status, error, data)
   SELECT 'evt_' || {random_hex}, $type, clock.t, $messageId::text, m.status, m.error, $data::text FROM clock LEFT JOIN messages m ON m.id = $messageId::text`));
const lockDecision = prepare(decisionRow);
const statusOf = prepare(messageStatus);

/** The repositories on `run`: the pool's (`batch`: inserts and status moves batched) or a transaction's connection. */
export function postgresRepositories(run: Run, batch = false): Repositories {
  return {
    messages: postgresMessages(run, batch),
    chats: bind(run, chats),
    contacts: bind(run, contacts),
    idempotency: {
      ...bind(run, idempotency),
      async lockForDecision(claim, ttlMs) {
        const found = (await lockDecision(run, { scope: claim.scope, key: claim.key, ttlMs })).rows[0];
        if (!found) return undefined;
        return decision(found, found.messageId === null ? undefined : (await statusOf(run, { id: found.messageId })).rows[0]?.status);
      },
    },
    workflows: bind(run, workflows),
    leases: bind(run, leases),
    apiKeys: bind(run, apiKeys),
    sessions: bind(run, sessions),
    generations: bind(run, generations),
    networkState: bind(run, networkState),
    lines: bind(run, lines),
    webhooks: {
      ...bind(run, webhooks),
      claimDue: async (owner, leaseMs, limit, perEndpoint, skip) =>
        (await claim(run, { owner, leaseMs, limit, perEndpoint, skip })).rows.map(toClaimedDelivery),
      async retryNow(endpointId, id) {
        const found = (await retryNow(run, { endpointId, id })).rows[0];
        return found ? toDeliveryRow(found) : undefined;
      },
    },
    retention: bind(run, retention),
    events: { append: async (type, about) => void (await appendEvent(run, appendParams(type, about))) },
  };
}
