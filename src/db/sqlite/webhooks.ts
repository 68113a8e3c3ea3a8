import type { Database } from "bun:sqlite";
import type { WebhookEndpointRow, WebhookRepository } from "../port";
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
import type { Sync } from "./gate";

type Stored = Record<string, unknown>;

const ENDPOINT = endpointColumns();
/** Ids made as the migration's triggers make them (drizzle/sqlite/0009_webhooks.sql). */
const DELIVERY_ID = `'dlv_' || lower(hex(randomblob(16)))`;
/** A delivery as it starts a new series: pending, due now, no attempt yet, unleased. */
const NEW_SERIES = `state = 'pending', attempts = 0, next_attempt_at = $now, lease_owner = NULL, lease_until = NULL, updated_at = $now`;
/** Pending, due and not leased (or its lease expired), of table or alias `d`. */
const DUE = `d.state = 'pending' AND d.next_attempt_at <= $now AND (d.lease_until IS NULL OR d.lease_until <= $now)`;

/**
 * The webhook_endpoints, events and webhook_deliveries tables; events and their first
 * deliveries are written by the migration's triggers. `now` counts milliseconds.
 */
export function sqliteWebhooks(sqlite: Database, now: () => number): Sync<WebhookRepository> {
  const createEndpoint = sqlite.prepare<Stored, [{ id: string; url: string; events: string | null; description: string | null; secret: string; now: number }]>(
    `INSERT INTO webhook_endpoints (id, url, events, description, enabled, secret, created_at, updated_at)
     VALUES ($id, $url, $events, $description, 1, $secret, $now, $now) RETURNING ${ENDPOINT}`,
  );
  const listEndpoints = sqlite.prepare<Stored, []>(`SELECT ${ENDPOINT} FROM webhook_endpoints ORDER BY created_at, id`);
  const getEndpoint = sqlite.prepare<Stored, [{ id: string }]>(`SELECT ${ENDPOINT} FROM webhook_endpoints WHERE id = $id`);
  // `setX` says whether the patch gives X (null is a value for events and description).
  const updateEndpoint = sqlite.prepare<
    Stored,
    [{ id: string; setUrl: number; url: string | null; setEvents: number; events: string | null; setDescription: number; description: string | null; enabled: number | null; now: number }]
  >(
    `UPDATE webhook_endpoints SET
       url = CASE WHEN $setUrl THEN $url ELSE url END,
       events = CASE WHEN $setEvents THEN $events ELSE events END,
       description = CASE WHEN $setDescription THEN $description ELSE description END,
       enabled = coalesce($enabled, enabled),
       disabled_reason = CASE WHEN $enabled IS NULL THEN disabled_reason END,
       failing_since = CASE WHEN $enabled THEN NULL ELSE failing_since END,
       updated_at = $now
     WHERE id = $id RETURNING ${ENDPOINT}`,
  );
  // Its deliveries go with it (ON DELETE CASCADE).
  const deleteEndpoint = sqlite.prepare<never, [{ id: string }]>(`DELETE FROM webhook_endpoints WHERE id = $id`);
  const rotateSecret = sqlite.prepare<Stored, [{ id: string; secret: string; until: number; now: number }]>(
    `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = $until, secret = $secret, updated_at = $now
     WHERE id = $id RETURNING ${ENDPOINT}`,
  );

  const events = sqlite.prepare<Stored, [{ since: number; limit: number }]>(
    `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.timestamp > $since ORDER BY ev.timestamp LIMIT $limit`,
  );
  const eventsOfType = sqlite.prepare<Stored, [{ since: number; limit: number; type: string }]>(
    `SELECT ${EVENT_COLUMNS} FROM events ev ${EVENT_JOINS} WHERE ev.type = $type AND ev.timestamp > $since ORDER BY ev.timestamp LIMIT $limit`,
  );
  // Deliveries made together (one transaction's events) share a creation time: their events' order breaks the tie.
  const deliveries = sqlite.prepare<Stored, [{ endpointId: string; limit: number; state: string | null }]>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id
     WHERE d.endpoint_id = $endpointId AND ($state IS NULL OR d.state = $state)
     ORDER BY d.created_at DESC, ev.timestamp DESC LIMIT $limit`,
  );

  // Up to `perEndpoint` due deliveries of each enabled endpoint not skipped (its index, earliest first), the earliest `limit` of those.
  const lease = sqlite.prepare<{ id: string }, [{ owner: string; until: number; now: number; limit: number; perEndpoint: number; skip: string }]>(
    `UPDATE webhook_deliveries SET lease_owner = $owner, lease_until = $until
     WHERE id IN (
       SELECT c.id FROM webhook_endpoints e JOIN webhook_deliveries c ON c.id IN (
         SELECT d.id FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND ${DUE} ORDER BY d.next_attempt_at LIMIT $perEndpoint
       )
       WHERE e.enabled AND e.id NOT IN (SELECT value FROM json_each($skip))
       ORDER BY c.next_attempt_at LIMIT $limit
     ) RETURNING id`,
  );
  // A read first: an idle deliverer never takes the write lock, so it never waits out another process's.
  const anyDue = sqlite.prepare<{ due: number }, [{ now: number }]>(
    `SELECT 1 AS due FROM webhook_endpoints e
     WHERE e.enabled AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND ${DUE}) LIMIT 1`,
  );
  const claimed = sqlite.prepare<Stored, [{ ids: string }]>(
    `SELECT ${DELIVERY_COLUMNS}, ${endpointColumns("e", CLAIMED_ENDPOINT)}, ${EVENT_COLUMNS}
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN events ev ON ev.id = d.event_id ${EVENT_JOINS}
     WHERE d.id IN (SELECT value FROM json_each($ids))
     ORDER BY d.next_attempt_at, ev.timestamp`,
  );
  const recordAttempt = sqlite.prepare<
    never,
    [{ id: string; owner: string; state: string; status: number | null; error: string | null; next: number | null; now: number }]
  >(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, state = $state, last_status = $status, last_error = $error, last_attempt_at = $now,
       next_attempt_at = $next, lease_owner = NULL, lease_until = NULL, updated_at = $now
     WHERE id = $id AND lease_owner = $owner AND state = 'pending'`,
  );
  const markSucceeding = sqlite.prepare<never, [{ id: string }]>(
    `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $id AND failing_since IS NOT NULL`,
  );
  const markFailing = sqlite.prepare<{ disabled: number }, [{ id: string; now: number; before: number }]>(
    `UPDATE webhook_endpoints SET
       failing_since = coalesce(failing_since, $now),
       enabled = enabled AND NOT coalesce(failing_since < $before, 0),
       disabled_reason = CASE WHEN enabled AND failing_since < $before THEN 'failing' ELSE disabled_reason END,
       updated_at = CASE WHEN enabled AND failing_since < $before THEN $now ELSE updated_at END
     WHERE id = $id
     RETURNING NOT enabled AND disabled_reason = 'failing' AND failing_since < $before AS disabled`,
  );
  const disableEndpoint = sqlite.prepare<never, [{ id: string; reason: string; now: number }]>(
    `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $reason, updated_at = $now WHERE id = $id`,
  );
  // WHERE true: SQLite's upsert after INSERT … SELECT needs a WHERE to parse.
  const replay = sqlite.prepare<never, [{ endpointId: string; since: number; now: number }]>(
    `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, state, attempts, next_attempt_at, created_at, updated_at)
     SELECT ${DELIVERY_ID}, e.id, ev.id, 'pending', 0, $now, $now, $now
     FROM webhook_endpoints e JOIN events ev ON ev.timestamp > $since
       AND (e.events IS NULL OR ev.type IN (SELECT value FROM json_each(e.events)))
     WHERE e.id = $endpointId
     ON CONFLICT (endpoint_id, event_id) DO UPDATE SET ${NEW_SERIES}`,
  );
  const retryNow = sqlite.prepare<{ id: string }, [{ endpointId: string; id: string; now: number }]>(
    `UPDATE webhook_deliveries SET ${NEW_SERIES} WHERE id = $id AND endpoint_id = $endpointId RETURNING id`,
  );
  const deliveryById = sqlite.prepare<Stored, [{ id: string }]>(
    `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.id = $id`,
  );
  const purgeDeliveries = sqlite.prepare<never, [{ before: number }]>(
    `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < $before`,
  );
  // An event stays while a delivery still refers to it: a pending one, or a recent entry of the delivery log.
  const purgeEvents = sqlite.prepare<never, [{ before: number }]>(
    `DELETE FROM events WHERE timestamp < $before AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)`,
  );

  const claim = sqlite.transaction((owner: string, leaseMs: number, limit: number, perEndpoint: number, skip: readonly string[]) => {
    const t = now();
    const ids = lease.all({ owner, until: t + leaseMs, now: t, limit, perEndpoint, skip: JSON.stringify(skip) }).map((r) => r.id);
    return ids.length === 0 ? [] : claimed.all({ ids: JSON.stringify(ids) }).map(toClaimedDelivery);
  });
  const retry = sqlite.transaction((endpointId: string, id: string) => {
    const row = retryNow.get({ endpointId, id, now: now() });
    return row ? toDeliveryRow(deliveryById.get({ id: row.id })!) : undefined;
  });
  const purge = sqlite.transaction((ageMs: number) => {
    const before = now() - ageMs;
    return { deliveries: purgeDeliveries.run({ before }).changes, events: purgeEvents.run({ before: before * 1000 }).changes };
  });

  const endpoint = (row: Stored | null) => (row ? toEndpointRow(row) : undefined);
  const list = (types: WebhookEndpointRow["events"]) => (types === null ? null : JSON.stringify(types));

  return {
    createEndpoint: (e) => toEndpointRow(createEndpoint.get({ ...e, events: list(e.events), now: now() })!),

    listEndpoints: () => listEndpoints.all().map((row) => toEndpointRow(row)),

    getEndpoint: (id) => endpoint(getEndpoint.get({ id })),

    updateEndpoint: (id, patch) =>
      endpoint(
        updateEndpoint.get({
          id,
          setUrl: patch.url === undefined ? 0 : 1,
          url: patch.url ?? null,
          setEvents: patch.events === undefined ? 0 : 1,
          events: patch.events === undefined ? null : list(patch.events),
          setDescription: patch.description === undefined ? 0 : 1,
          description: patch.description ?? null,
          enabled: patch.enabled === undefined ? null : patch.enabled ? 1 : 0,
          now: now(),
        }),
      ),

    deleteEndpoint: (id) => deleteEndpoint.run({ id }).changes > 0,

    rotateSecret(id, secret, keepPreviousMs) {
      const t = now();
      return endpoint(rotateSecret.get({ id, secret, until: t + keepPreviousMs, now: t }));
    },

    events(since, limit, type) {
      const rows = type ? eventsOfType.all({ since, limit: limit + 1, type }) : events.all({ since, limit: limit + 1 });
      const hasMore = rows.length > limit;
      if (hasMore) rows.pop();
      return { rows: rows.map(toEventRow), hasMore };
    },

    deliveries: (endpointId, limit, state) => deliveries.all({ endpointId, limit, state: state ?? null }).map(toDeliveryRow),

    claimDue: (owner, leaseMs, limit, perEndpoint, skipEndpoints) =>
      anyDue.get({ now: now() }) ? claim.immediate(owner, leaseMs, limit, perEndpoint, skipEndpoints) : [],

    recordAttempt(deliveryId, owner, outcome) {
      const t = now();
      const next = outcome.state === "pending" ? t + Math.round(outcome.retryInMs ?? 0) : null;
      return recordAttempt.run({ id: deliveryId, owner, state: outcome.state, status: outcome.status, error: outcome.error, next, now: t }).changes === 1;
    },

    markSucceeding: (endpointId) => void markSucceeding.run({ id: endpointId }),

    markFailing(endpointId, disableAfterMs) {
      const t = now();
      return markFailing.get({ id: endpointId, now: t, before: t - disableAfterMs })?.disabled === 1;
    },

    disableEndpoint: (endpointId, reason) => void disableEndpoint.run({ id: endpointId, reason, now: now() }),

    replay: (endpointId, since) => replay.run({ endpointId, since, now: now() }).changes,

    retryNow: (endpointId, deliveryId) => retry.immediate(endpointId, deliveryId),

    purgeOlderThan: (ageMs) => purge.immediate(ageMs),
  };
}
