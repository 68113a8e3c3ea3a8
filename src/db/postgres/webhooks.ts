import type { WebhookRepository } from "../port";
import {
  CLAIMED_ENDPOINT,
  DELIVERY_COLUMNS,
  endpointColumns,
  EVENT_COLUMNS,
  EVENT_JOINS,
  toClaimedDelivery,
  toDeliveryRow,
  toEndpointRow,
  toEventRow,
} from "../webhook-rows";
import { NOW_MS, statement, type Run } from "./sql";

const ENDPOINT = endpointColumns();
/** Ids made as the migration's triggers make them (drizzle/postgres/0002_webhooks.sql). */
const DELIVERY_ID = `'dlv_' || replace(gen_random_uuid()::text, '-', '')`;
/** A delivery as it starts a new series: pending, due now, no attempt yet, unleased. */
const NEW_SERIES = `state = 'pending', attempts = 0, next_attempt_at = ${NOW_MS}, lease_owner = NULL, lease_until = NULL, updated_at = ${NOW_MS}`;
/** Pending, due and not leased (or its lease expired), of alias `d`. */
const DUE = `d.state = 'pending' AND d.next_attempt_at <= ${NOW_MS} AND (d.lease_until IS NULL OR d.lease_until <= ${NOW_MS})`;

const createEndpoint = statement(
  "webhooks.createEndpoint",
  `INSERT INTO webhook_endpoints (id, url, events, description, enabled, secret, created_at, updated_at)
   VALUES ($1, $2, $3, $4, true, $5, ${NOW_MS}, ${NOW_MS}) RETURNING ${ENDPOINT}`,
);
const listEndpoints = statement("webhooks.listEndpoints", `SELECT ${ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id`);
const getEndpoint = statement("webhooks.getEndpoint", `SELECT ${ENDPOINT} FROM webhook_endpoints WHERE id = $1`);
// $2, $4, $6: whether the patch gives url, events, description (null is a value for the last two).
const updateEndpoint = statement(
  "webhooks.updateEndpoint",
  `UPDATE webhook_endpoints SET
     url = CASE WHEN $2 THEN $3 ELSE url END,
     events = CASE WHEN $4 THEN $5::text[] ELSE events END,
     description = CASE WHEN $6 THEN $7 ELSE description END,
     enabled = coalesce($8, enabled),
     disabled_reason = CASE WHEN $8::boolean IS NULL THEN disabled_reason END,
     failing_since = CASE WHEN $8 THEN NULL ELSE failing_since END,
     updated_at = ${NOW_MS}
   WHERE id = $1 RETURNING ${ENDPOINT}`,
);
// Its deliveries go with it (ON DELETE CASCADE).
const deleteEndpoint = statement("webhooks.deleteEndpoint", `DELETE FROM webhook_endpoints WHERE id = $1`);
const rotateSecret = statement(
  "webhooks.rotateSecret",
  `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ${NOW_MS} + $3, secret = $2, updated_at = ${NOW_MS}
   WHERE id = $1 RETURNING ${ENDPOINT}`,
);
const events = statement(
  "webhooks.events",
  `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.timestamp > $1 ORDER BY ev.timestamp LIMIT $2`,
);
const eventsOfType = statement(
  "webhooks.eventsOfType",
  `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.type = $3 AND ev.timestamp > $1 ORDER BY ev.timestamp LIMIT $2`,
);
// Deliveries made together (one transaction's events) share a creation time: their events' order breaks the tie.
const deliveries = statement(
  "webhooks.deliveries",
  `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
   WHERE d.endpoint_id = $1 AND ($3::text IS NULL OR d.state = $3)
   ORDER BY d.created_at DESC, ev.timestamp DESC LIMIT $2`,
);
/**
 * Up to $4 due deliveries of each enabled endpoint not in $5 (its index, earliest first),
 * the earliest $3 of those, locked without waiting: rows another claimer holds are skipped,
 * and one it leased and committed meanwhile fails DUE when re-checked under the lock.
 * Returned with their endpoint and event; the outer SELECT reads the leased rows from
 * `claimed`, since it cannot see the UPDATE's effects on the table.
 */
const claim = statement(
  "webhooks.claimDue",
  `WITH claimed AS (
     UPDATE webhook_deliveries SET lease_owner = $1, lease_until = ${NOW_MS} + $2
     WHERE id IN (
       SELECT d.id FROM webhook_deliveries d
       WHERE d.id IN (
         SELECT c.id FROM webhook_endpoints e CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
           WHERE d.endpoint_id = e.id AND ${DUE} ORDER BY d.next_attempt_at LIMIT $4
         ) c
         WHERE e.enabled AND e.id <> ALL ($5::text[])
         ORDER BY c.next_attempt_at LIMIT $3
       ) AND ${DUE}
       FOR UPDATE SKIP LOCKED
     )
     RETURNING *
   )
   SELECT ${DELIVERY_COLUMNS}, ${endpointColumns("e", CLAIMED_ENDPOINT)}, ${EVENT_COLUMNS}
   FROM claimed d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN events ev ON ev.id = d.event_id ${EVENT_JOINS}
   ORDER BY d.next_attempt_at, ev.timestamp`,
);
const recordAttempt = statement(
  "webhooks.recordAttempt",
  `UPDATE webhook_deliveries SET attempts = attempts + 1, state = $3, last_status = $4, last_error = $5, last_attempt_at = ${NOW_MS},
     next_attempt_at = CASE WHEN $3 = 'pending' THEN ${NOW_MS} + $6 END, lease_owner = NULL, lease_until = NULL, updated_at = ${NOW_MS}
   WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`,
);
const markSucceeding = statement(
  "webhooks.markSucceeding",
  `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1 AND failing_since IS NOT NULL`,
);
// RETURNING sees the new row: disabled as failing, with failures older than $2.
const markFailing = statement<{ disabled: boolean }>(
  "webhooks.markFailing",
  `UPDATE webhook_endpoints SET
     failing_since = coalesce(failing_since, ${NOW_MS}),
     enabled = enabled AND NOT coalesce(failing_since < ${NOW_MS} - $2, false),
     disabled_reason = CASE WHEN enabled AND failing_since < ${NOW_MS} - $2 THEN 'failing' ELSE disabled_reason END,
     updated_at = CASE WHEN enabled AND failing_since < ${NOW_MS} - $2 THEN ${NOW_MS} ELSE updated_at END
   WHERE id = $1
   RETURNING NOT enabled AND disabled_reason = 'failing' AND failing_since < ${NOW_MS} - $2 AS disabled`,
);
const disableEndpoint = statement(
  "webhooks.disableEndpoint",
  `UPDATE webhook_endpoints SET enabled = false, disabled_reason = $2, updated_at = ${NOW_MS} WHERE id = $1`,
);
const replay = statement(
  "webhooks.replay",
  `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, state, attempts, next_attempt_at, created_at, updated_at)
   SELECT ${DELIVERY_ID}, e.id, ev.id, 'pending', 0, ${NOW_MS}, ${NOW_MS}, ${NOW_MS}
   FROM webhook_endpoints e JOIN events ev ON ev.timestamp > $2 AND (e.events IS NULL OR ev.type = ANY (e.events))
   WHERE e.id = $1
   ON CONFLICT (endpoint_id, event_id) DO UPDATE SET ${NEW_SERIES}`,
);
const retryNow = statement(
  "webhooks.retryNow",
  `WITH d AS (UPDATE webhook_deliveries SET ${NEW_SERIES} WHERE id = $2 AND endpoint_id = $1 RETURNING *)
   SELECT ${DELIVERY_COLUMNS} FROM d JOIN events ev ON ev.id = d.event_id`,
);
const purgeDeliveries = statement(
  "webhooks.purgeDeliveries",
  `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < ${NOW_MS} - $1`,
);
// An event stays while a delivery still refers to it: a pending one, or a recent entry of the delivery log.
const purgeEvents = statement(
  "webhooks.purgeEvents",
  `DELETE FROM events WHERE timestamp < (${NOW_MS} - $1) * 1000
   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)`,
);

/**
 * The webhook_endpoints, events and webhook_deliveries tables, timed by the database's
 * clock; events and their first deliveries are written by the migration's triggers.
 */
export function postgresWebhooks(run: Run): WebhookRepository {
  const endpoint = (row: Record<string, unknown> | undefined) => (row ? toEndpointRow(row) : undefined);
  return {
    createEndpoint: async (e) => toEndpointRow((await run(createEndpoint, [e.id, e.url, e.events, e.description, e.secret])).rows[0]!),

    listEndpoints: async () => (await run(listEndpoints, [])).rows.map((row) => toEndpointRow(row)),

    getEndpoint: async (id) => endpoint((await run(getEndpoint, [id])).rows[0]),

    updateEndpoint: async (id, patch) =>
      endpoint(
        (
          await run(updateEndpoint, [
            id,
            patch.url !== undefined,
            patch.url ?? null,
            patch.events !== undefined,
            patch.events ?? null,
            patch.description !== undefined,
            patch.description ?? null,
            patch.enabled ?? null,
          ])
        ).rows[0],
      ),

    deleteEndpoint: async (id) => ((await run(deleteEndpoint, [id])).rowCount ?? 0) > 0,

    rotateSecret: async (id, secret, keepPreviousMs) => endpoint((await run(rotateSecret, [id, secret, keepPreviousMs])).rows[0]),

    async events(since, limit, type) {
      const { rows } = type ? await run(eventsOfType, [since, limit + 1, type]) : await run(events, [since, limit + 1]);
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows: rows.map(toEventRow), hasMore };
    },

    deliveries: async (endpointId, limit, state) => (await run(deliveries, [endpointId, limit, state ?? null])).rows.map(toDeliveryRow),

    claimDue: async (owner, leaseMs, limit, perEndpoint, skipEndpoints) =>
      (await run(claim, [owner, leaseMs, limit, perEndpoint, skipEndpoints])).rows.map(toClaimedDelivery),

    recordAttempt: async (deliveryId, owner, o) =>
      (await run(recordAttempt, [deliveryId, owner, o.state, o.status, o.error, Math.round(o.retryInMs ?? 0)])).rowCount === 1,

    markSucceeding: async (endpointId) => void (await run(markSucceeding, [endpointId])),

    markFailing: async (endpointId, disableAfterMs) => (await run(markFailing, [endpointId, disableAfterMs])).rows[0]?.disabled === true,

    disableEndpoint: async (endpointId, reason) => void (await run(disableEndpoint, [endpointId, reason])),

    replay: async (endpointId, since) => (await run(replay, [endpointId, since])).rowCount ?? 0,

    async retryNow(endpointId, deliveryId) {
      const row = (await run(retryNow, [endpointId, deliveryId])).rows[0];
      return row ? toDeliveryRow(row) : undefined;
    },

    // Two statements, each atomic: a delivery purged by the first no longer keeps its event.
    purgeOlderThan: async (ageMs) => ({
      deliveries: (await run(purgeDeliveries, [ageMs])).rowCount ?? 0,
      events: (await run(purgeEvents, [ageMs])).rowCount ?? 0,
    }),
  };
}
