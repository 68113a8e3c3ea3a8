import type { Database } from "bun:sqlite";
import { apiKeys } from "../api-keys";
import { chats } from "../chats";
import { contacts } from "../contacts";
import { generations } from "../generations";
import { decision, decisionRow, idempotency, messageStatus } from "../idempotency";
import { leases } from "../leases";
import { byNetworkId, bySendAt, DIRECT, historyPage, historyTotal as historyCount, messages, newest, newRow, record, row, scheduledPage, UNREAD } from "../messages";
import type { ConversationRow, MessageRow, NewMessage, RecordRow } from "../messages";
import { lines } from "../lines";
import { networkState } from "../network-state";
import { retention } from "../retention";
import { sessions } from "../sessions";
import { sql } from "../sql";
import { appendParams, claimed, DELIVERY_COLUMNS, DUE, NEW_SERIES, toClaimedDelivery, toDeliveryRow, webhooks } from "../webhooks";
import { workflows } from "../workflows";
import type { SyncRepositories } from "./gate";
import { statements } from "./statements";

// What only SQLite runs: the process clock for message timestamps, snapshots as read
// transactions, claims as a read then an update under the write lock.

const insertRow = sql("", `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at, opt_out_type, reply_to, send_at, media_count, chat_id, line_id)
   VALUES ($id, $phone, $body, $direction, $status, $timestamp, $network, $networkId, $error, $updatedAt, $optOutType, $replyTo, $sendAt, $mediaCount, $chatId, $lineId)`);
const insertMedia = sql("", `INSERT INTO media (id, message_id, position, content_type, size, store_key, created_at)
   VALUES ($id, $messageId, $position, $contentType, $size, $storeKey, {now_ms})`);
const historyRows = sql<RecordRow>("", historyPage);
// On every line kept by a trigger on every insert (drizzle/sqlite/0005_contacts.sql).
const historyTotal = sql<{ n: number }>("", `SELECT ${historyCount} AS n`);
const scheduledRows = sql<RecordRow>("", scheduledPage);
const scheduledTotal = sql<{ n: number }>("", `SELECT count(*) AS n FROM messages WHERE status = 'scheduled'`);
const conversations = sql<Omit<ConversationRow, "optedOut"> & { optedOut: number }>("", `SELECT ${record("m.")}, c.opted_out AS "optedOut", ${UNREAD} AS unread
   FROM contacts c
   JOIN messages m ON m.id = (SELECT id FROM messages WHERE phone = c.phone AND ${DIRECT} ORDER BY timestamp DESC, id DESC LIMIT 1)
   WHERE c.messages > 0 AND ($search IS NULL OR instr(c.phone, $search) > 0) AND ($line IS NULL OR m.line_id = $line)
   ORDER BY m.timestamp DESC, m.id DESC
   LIMIT $limit`);
// Due: the partial index messages_scheduled_idx holds only scheduled rows, soonest first.
const anyDueScheduled = sql<{ due: number }>("", `SELECT 1 AS due FROM messages WHERE status = 'scheduled' AND send_at <= {now_ms} LIMIT 1`);
const claimScheduled = sql<MessageRow>("", `UPDATE messages SET status = 'queued', updated_at = {now_us}
   WHERE id IN (SELECT id FROM messages WHERE status = 'scheduled' AND send_at <= {now_ms} ORDER BY send_at, timestamp LIMIT $limit)
   RETURNING ${row()}`);
const lease = sql<{ id: string }>("", `UPDATE webhook_deliveries SET lease_owner = $owner, lease_until = {now_ms} + $leaseMs
   WHERE id IN (
     SELECT c.id FROM webhook_endpoints e JOIN webhook_deliveries c ON c.id IN (
       SELECT d.id FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND ${DUE} ORDER BY d.next_attempt_at LIMIT $perEndpoint
     )
     WHERE e.enabled AND e.id <> ALL($skip::text[])
     ORDER BY c.next_attempt_at LIMIT $limit
   ) RETURNING id`);
// A read first: an idle deliverer never takes the write lock, so it never waits out another process's.
const anyDueDelivery = sql<{ due: number }>(
  "",
  `SELECT 1 AS due FROM webhook_endpoints e WHERE e.enabled AND EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND ${DUE}) LIMIT 1`,
);
const leased = sql("", `${claimed("webhook_deliveries")} WHERE d.id = ANY($ids::text[]) ORDER BY d.next_attempt_at, ev.timestamp`);
const retryNow = sql<{ id: string }>("", `UPDATE webhook_deliveries SET ${NEW_SERIES} WHERE id = $id AND endpoint_id = $endpointId RETURNING id`);
const deliveryById = sql("", `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d JOIN events ev ON ev.id = d.event_id WHERE d.id = $id`);

// The event clock as the triggers take it (drizzle/sqlite/0009_webhooks.sql): after the newest event, at least 1 µs apart.
const appendEvent = sql("", `INSERT INTO events (id, type, timestamp, message_id, status, error, data)
   SELECT 'evt_' || {random_hex}, $type, max(coalesce((SELECT max(timestamp) FROM events), 0) + 1, {now_us}), $messageId, m.status, m.error, $data
   FROM (SELECT 1) one LEFT JOIN messages m ON m.id = $messageId`);

/** The repositories on one bun:sqlite connection, every statement prepared once; `clock` counts microseconds. */
export function sqliteRepositories(sqlite: Database, clock: () => number): SyncRepositories {
  const { prepareAll, bind } = statements(sqlite, clock);
  const q = prepareAll({ newest, byNetworkId, insertRow, insertMedia, historyRows, historyTotal, scheduledRows, scheduledTotal, conversations });
  const due = prepareAll({ anyDueScheduled, claimScheduled });
  const keys = prepareAll({ decisionRow, messageStatus });
  const append = prepareAll({ appendEvent }).appendEvent;
  const hooks = prepareAll({ lease, anyDueDelivery, leased, retryNow, deliveryById });

  /**
   * One clock for all messages: after every stored timestamp, at least 1 µs apart, taken
   * under the write lock (BEGIN IMMEDIATE, or the unit of work's), so in commit order even
   * with several processes on one file. Inside the unit of work this runs as a savepoint.
   */
  const insert = sqlite.transaction((message: NewMessage): { row: MessageRow; created: boolean } => {
    if (message.networkId != null) {
      const existing = q.byNetworkId.get({ network: message.network, direction: message.direction, networkId: message.networkId });
      if (existing) return { row: existing, created: false };
    }
    const stored = newRow(message, Math.max(clock(), (q.newest.get()?.ts ?? 0) + 1));
    q.insertRow.run({ ...stored });
    message.media?.forEach((m, position) =>
      q.insertMedia.run({ id: m.id, messageId: stored.id, position, contentType: m.contentType, size: m.size, storeKey: m.storeKey }),
    );
    return { row: stored, created: true };
  });
  // Read transactions, so the page and the total agree.
  const history = sqlite.transaction((phone: string, limit: number, offset: number, line: string | null) => ({
    rows: q.historyRows.all({ phone, limit, offset, line }),
    total: q.historyTotal.get({ phone, line })?.n ?? 0,
  }));
  const scheduled = sqlite.transaction((limit: number, offset: number) => ({
    rows: q.scheduledRows.all({ limit, offset }),
    total: q.scheduledTotal.get()?.n ?? 0,
  }));
  const claim = sqlite.transaction((owner: string, leaseMs: number, limit: number, perEndpoint: number, skip: readonly string[]) => {
    const ids = hooks.lease.all({ owner, leaseMs, limit, perEndpoint, skip }).map((r) => r.id);
    return ids.length === 0 ? [] : hooks.leased.all({ ids }).map(toClaimedDelivery);
  });
  const retry = sqlite.transaction((endpointId: string, id: string) => {
    const found = hooks.retryNow.get({ endpointId, id });
    return found ? toDeliveryRow(hooks.deliveryById.get({ id: found.id })!) : undefined;
  });

  return {
    messages: {
      ...bind(messages),
      insert: (message) => insert.immediate(message),
      history: (phone, limit, offset, line) => history(phone, limit, offset, line ?? null),
      scheduled: (limit, offset) => scheduled(limit, offset),
      conversations: ({ search, limit, line }) => q.conversations.all({ search: search ?? null, limit, line: line ?? null }).map((r) => ({ ...r, optedOut: r.optedOut === 1 })),
      claimDueScheduled: (limit) => (due.anyDueScheduled.get() ? due.claimScheduled.all({ limit }).sort(bySendAt) : []),
    },
    chats: bind(chats),
    contacts: bind(contacts),
    idempotency: {
      ...bind(idempotency),
      lockForDecision(claim, ttlMs) {
        const found = keys.decisionRow.get({ scope: claim.scope, key: claim.key, ttlMs });
        return found && decision(found, found.messageId === null ? undefined : keys.messageStatus.get({ id: found.messageId })?.status);
      },
    },
    workflows: bind(workflows),
    leases: bind(leases),
    apiKeys: bind(apiKeys),
    sessions: bind(sessions),
    generations: bind(generations),
    networkState: bind(networkState),
    lines: bind(lines),
    webhooks: {
      ...bind(webhooks),
      claimDue: (owner, leaseMs, limit, perEndpoint, skip) =>
        hooks.anyDueDelivery.get() ? claim.immediate(owner, leaseMs, limit, perEndpoint, skip) : [],
      retryNow: (endpointId, deliveryId) => retry.immediate(endpointId, deliveryId),
    },
    retention: bind(retention),
    events: { append: (type, about) => void append.run(appendParams(type, about)) },
  };
}
