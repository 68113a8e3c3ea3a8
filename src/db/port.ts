/**
 * The storage port: everything the domain (src/messages, src/workflows, src/auth,
 * src/generator, the network drivers' small state) asks of a database, and nothing about
 * which database. `await openStorage(url)` (src/db/index.ts) opens, migrates and returns a
 * `Storage`, or throws DatabaseError (src/db/errors.ts); src/db/sqlite and src/db/postgres
 * implement it, each with its own Drizzle schema and migrations. No
 * file outside those two folders imports a database driver or a Drizzle dialect, and
 * nothing under src/db imports the domain: only the shared vocabulary (src/vocabulary/).
 *
 * Shape: one repository per aggregate (messages, contacts, idempotency keys, workflows,
 * named leases, API keys, console sessions, generations, network state, webhooks) and a
 * unit of work, `storage.transaction(async (tx) => …)`, whose `tx` has the same
 * repositories bound to one transaction. Every method is async.
 *
 * Rules every implementation keeps (the tests in test/unit run against each):
 *
 * - Only SQL lives in an implementation. Decisions (whether an idempotency key replays
 *   or conflicts, how a finished run moves the cursor and backoff) live once in the
 *   domain, built from these primitives inside `storage.transaction`. The status rule is
 *   the exception that proves it: implementations import the pure rule of
 *   src/vocabulary/message-status.ts and turn it into one conditional UPDATE.
 * - A method outside a transaction is atomic on its own. Methods documented as "one
 *   statement" are a single conditional statement (INSERT … ON CONFLICT DO NOTHING,
 *   UPDATE … WHERE <condition>), so two processes racing on them never both win; their
 *   boolean or count result says whether this call won.
 * - Times that decide something (lease and lock expiry, idempotency lifetimes, backoff,
 *   stale sends, retention) are computed inside the implementation from the database's
 *   clock (PostgreSQL: now()/clock_timestamp(); SQLite: the process clock, since every
 *   process is on one machine). The domain passes durations, never "now".
 * - Message timestamps are microseconds since the epoch, unique and strictly increasing
 *   in commit order across every process: a reader that follows `timestamp > cursor`
 *   never misses a row committed later with a smaller timestamp (the poll cursor rule,
 *   docs/api.md). Other times are milliseconds since the epoch.
 * - Inside `transaction(fn)`, `fn` uses only `tx`, never the outer storage (on SQLite the
 *   outer one waits for the transaction to end: a deadlock; on PostgreSQL it is another
 *   connection), and `tx` is not used once `fn` has settled. A throw rolls everything back.
 */
import type { EventType } from "../vocabulary/events";
import type { MessageStatus } from "../vocabulary/message-status";
import type { IdempotencyState, MessageDirection, OptOutType, PendingMessage } from "../vocabulary/messages";
import type { DeliveryState, EndpointDisabledReason } from "../vocabulary/webhooks";
import type { RunStatus, RunTrigger } from "../vocabulary/workflows";

export type Dialect = "sqlite" | "postgres";

// ─── messages ──────────────────────────────────────────────────────────────────────────

export interface MessageRow {
  id: string;
  phone: string;
  body: string;
  direction: MessageDirection;
  status: MessageStatus;
  /** Microseconds since the epoch; unique and strictly increasing in commit order. */
  timestamp: number;
  network: string;
  /** The network's own id for this message: unique per network and direction. */
  networkId: string | null;
  error: string | null;
  /** Microseconds since the epoch. */
  updatedAt: number;
  /** Inbound only: the keyword class the network recognised. */
  optOutType: OptOutType | null;
  /** The id of our message this one answers (a threaded reply); null when none. */
  replyTo: string | null;
  /** `scheduled` messages: when to send it (ms since the epoch); null otherwise. */
  sendAt: number | null;
  /** How many media rows the message has (0 for most): pages read media only for rows with some. */
  mediaCount: number;
}

/** What a message record shows (pages read only these columns). */
export type RecordRow = Pick<
  MessageRow,
  "id" | "phone" | "body" | "direction" | "status" | "timestamp" | "error" | "replyTo" | "sendAt" | "mediaCount"
>;

/** A conversation as listed: its newest message and whether the contact opted out. */
export type ConversationRow = RecordRow & { optedOut: boolean };

/** One file of a message; the bytes are in the media store under `storeKey`. */
export interface MediaRow {
  /** `med_` + 32 hex digits. */
  id: string;
  messageId: string;
  /** 0 to 9: the file's place among the message's. */
  position: number;
  contentType: string;
  /** Bytes. */
  size: number;
  storeKey: string;
  /** ms since the epoch. */
  createdAt: number;
}

/** A file to store with its message: its position is its place in `NewMessage.media`, its time now. */
export type NewMedia = Pick<MediaRow, "id" | "contentType" | "size" | "storeKey">;

/**
 * A message to store; the implementation gives it its timestamp and `updatedAt`, and
 * `mediaCount` from `media`. `sendAt` goes with status `scheduled`.
 */
export type NewMessage = Omit<MessageRow, "timestamp" | "updatedAt" | "error" | "optOutType" | "replyTo" | "sendAt" | "mediaCount"> & {
  error?: string | null;
  optOutType?: OptOutType | null;
  replyTo?: string | null;
  sendAt?: number | null;
  /** Stored with the message, in the same transaction, in this order (at most 10). */
  media?: readonly NewMedia[];
};

/** A delivery report as kept, with whether it moved the message. */
export interface NewStatusReport {
  messageId: string;
  network: string;
  /** The network's own word (Twilio's `undelivered`, …). */
  networkStatus: string;
  status: MessageStatus;
  /** When the network says it happened (ms). */
  reportedAt: number;
  applied: boolean;
  error: string | null;
}

export interface MessageRepository {
  /**
   * Stores a message with the next timestamp of the one clock: max(the clock, the newest
   * stored timestamp + 1 µs), taken under a lock held to commit, so timestamps increase in
   * commit order. With a `networkId` already stored for this network and direction (a
   * unique constraint decides), stores nothing and returns the stored row, `created: false`.
   * Its `media` are stored with it, atomically (none when it was not created).
   */
  insert(message: NewMessage): Promise<{ row: MessageRow; created: boolean }>;

  /**
   * One statement: moves the message to `status` when the status rule
   * (src/vocabulary/message-status.ts, `statusesBefore(status)`) allows it from its current status,
   * and sets `updatedAt`; `networkId` and `error` are set when given (non-null). False when
   * the rule refused or no such message exists.
   */
  setStatus(id: string, status: MessageStatus, patch?: { networkId?: string | null; error?: string | null }): Promise<boolean>;

  get(id: string): Promise<MessageRow | undefined>;

  /** A message by the network's own id for it. */
  byNetworkId(network: string, direction: MessageDirection, networkId: string): Promise<MessageRow | undefined>;

  /** One contact's messages, newest first, and how many there are in all, read from one snapshot. */
  history(phone: string, limit: number, offset: number): Promise<{ rows: RecordRow[]; total: number }>;

  /**
   * The newest message of each phone with any message, newest first (ties by id), with the
   * contact's opt-out; only phones containing `search` (a plain substring) when given.
   */
  conversations(query: { search?: string; limit: number }): Promise<ConversationRow[]>;

  /** Inbound messages with `timestamp > since`, oldest first, at most `limit`; `hasMore` when more follow. */
  inboundAfter(since: number, limit: number, phone?: string): Promise<{ rows: RecordRow[]; hasMore: boolean }>;

  /**
   * Outbound messages of `network` not final (`queued` or `sent`), stored within the last
   * `windowMs` and unchanged (or unchecked) for `afterMs`, least recently checked first.
   */
  pendingOutbound(network: string, afterMs: number, windowMs: number, limit: number): Promise<PendingMessage[]>;

  /** Sets `updatedAt` of these messages (still not final) to now, so the next pass asks about others first. */
  markChecked(ids: string[]): Promise<void>;

  /**
   * One statement: fails outbound messages `queued` for longer than `olderThanMs` (their
   * process stopped before the network answered) with `error`, except those of
   * `exceptNetwork`. Returns how many.
   */
  failStaleQueued(olderThanMs: number, error: string, exceptNetwork?: string): Promise<number>;

  /**
   * The media of these messages, each message's ordered by position; a message without
   * media has no entry. One query, whatever the number of ids.
   */
  mediaOf(messageIds: readonly string[]): Promise<Map<string, MediaRow[]>>;

  /** One media row by its id. */
  media(id: string): Promise<MediaRow | undefined>;

  /**
   * One statement, safe across processes (PostgreSQL: FOR UPDATE SKIP LOCKED): moves up to
   * `limit` messages `scheduled` with `sendAt` <= now (database clock) to `queued`
   * (`updatedAt` now; the status trigger writes their events) and returns them, soonest
   * first. The caller that moved a message is the one that sends it. On SQLite a read comes
   * first: no write (no write lock) when nothing is due.
   */
  claimDueScheduled(limit: number): Promise<MessageRow[]>;

  /**
   * One statement: a `scheduled` message becomes `canceled` (final). Returns it as it is
   * now, or undefined when there is no such message or it is no longer `scheduled`.
   */
  cancelScheduled(id: string): Promise<MessageRow | undefined>;

  /** Messages waiting to be sent (`scheduled`), soonest `sendAt` first, and how many in all, from one snapshot. */
  scheduled(limit: number, offset: number): Promise<{ rows: RecordRow[]; total: number }>;

  /** Keeps a delivery report; its `receivedAt` is now. */
  recordStatusReport(report: NewStatusReport): Promise<void>;

  /** The newest stored timestamp (µs), 0 when there are no messages. */
  newestTimestamp(): Promise<number>;
}

// ─── contacts ──────────────────────────────────────────────────────────────────────────

/** A contact's opt-out state. No row: never opted out. */
export interface ContactRow {
  phone: string;
  optedOut: boolean;
  /** When it opted out (ms since the epoch); null when it is not opted out. */
  optedOutAt: number | null;
}

/**
 * The contacts table: one row a phone, made by its first message (which counts them) or by
 * an opt-out, whichever comes first.
 */
export interface ContactRepository {
  get(phone: string): Promise<ContactRow | undefined>;

  /**
   * One statement (upsert): opts the contact out (`optedOutAt` now, or kept when it was
   * already out) or back in (`optedOutAt` null). Returns the row as it is now.
   */
  setOptedOut(phone: string, optedOut: boolean): Promise<ContactRow>;
}

// ─── idempotency keys ──────────────────────────────────────────────────────────────────

/** One request's hold on an idempotency key: whose key (an API key's id, a workflow) and the key. */
export interface Claim {
  scope: string;
  key: string;
}

export interface IdempotencyRow {
  scope: string;
  key: string;
  /** SHA-256 of the route and the parsed request. */
  fingerprint: string;
  state: IdempotencyState;
  /** The answer to replay (JSON text); on a pending row, the answer to give once its message is sent. */
  response: string | null;
  /** The message this request sends, once stored. */
  messageId: string | null;
  /** ms since the epoch. */
  lockedUntil: number;
  /** ms since the epoch. */
  createdAt: number;
}

/** A key's row as a decision needs it, with the facts computed by the database. */
export interface IdempotencyDecisionRow extends IdempotencyRow {
  /** The status of `messageId`'s message; null when there is no message id or the message is gone. */
  messageStatus: MessageStatus | null;
  /** `lockedUntil` has passed (database clock). */
  lockExpired: boolean;
  /** The row is older than the `ttlMs` given (database clock): it counts as absent. */
  ttlExpired: boolean;
}

/** Primitives of the idempotency rules in src/messages/idempotency.ts. */
export interface IdempotencyRepository {
  /**
   * One statement (INSERT … ON CONFLICT DO NOTHING): a new pending row, locked for `lockMs`,
   * created now. True when this call inserted it; false when the key exists.
   */
  tryInsertPending(claim: Claim, fingerprint: string, lockMs: number): Promise<boolean>;

  /**
   * The key's row, locked until the transaction ends (PostgreSQL: FOR UPDATE; SQLite's
   * write transaction holds every row), with its message's status. Call inside
   * `transaction`. Undefined when the key does not exist.
   */
  lockForDecision(claim: Claim, ttlMs: number): Promise<IdempotencyDecisionRow | undefined>;

  /**
   * Takes the key over for a new attempt: no message, no answer, locked for `lockMs` from
   * now. With `fresh` (the old record outlived its TTL), the record starts over as a new
   * request: that fingerprint, pending, created now.
   */
  retake(claim: Claim, lockMs: number, fresh?: { fingerprint: string }): Promise<void>;

  /** Links the key to its stored message and the answer (JSON) it will give; call in the message's transaction. */
  attach(claim: Claim, messageId: string, response: string): Promise<void>;

  /** The request is answered: `done`, with the answer (JSON) to replay. */
  markDone(claim: Claim, response: string): Promise<void>;

  /** Ends the key's lock now (its send's outcome is unknown; the record answers retries). */
  unlock(claim: Claim): Promise<void>;

  /** One statement: forgets the key if it is still pending (its request failed). */
  release(claim: Claim): Promise<void>;

  /** One statement: drops keys created more than `ttlMs` ago; returns how many. */
  purgeExpired(ttlMs: number): Promise<number>;
}

// ─── workflows ─────────────────────────────────────────────────────────────────────────

export interface WorkflowRow {
  name: string;
  /** Timestamp (µs, as a message's) of the last inbound message a successful run polled. */
  cursor: number;
  /** Failed runs in a row. */
  failures: number;
  /** No scheduled run before this (ms). */
  backoffUntil: number | null;
  /** `backoffUntil` is still ahead (database clock, when read). */
  backingOff: boolean;
  leaseOwner: string | null;
  /** ms since the epoch. */
  leaseUntil: number | null;
  createdAt: number;
}

export interface WorkflowRunRow {
  id: string;
  workflow: string;
  trigger: RunTrigger;
  dryRun: boolean;
  /** ms since the epoch. */
  startedAt: number;
  endedAt: number | null;
  status: RunStatus | "running";
  error: string | null;
  /** Inbound messages the run polled. */
  handled: number;
}

/** A workflow's rows: cursor, backoff, lease, runs and its own state (`ctx.state`). */
export interface WorkflowRepository {
  /** One statement (INSERT … ON CONFLICT DO NOTHING): the workflow's row with this cursor, unless it exists. */
  create(name: string, cursor: number): Promise<void>;

  get(name: string): Promise<WorkflowRow | undefined>;

  /** The row, locked until the transaction ends (PostgreSQL: FOR UPDATE). Call inside `transaction`. */
  lockForUpdate(name: string): Promise<WorkflowRow | undefined>;

  /** A successful run: the cursor as given, no failures, no backoff. */
  recordSuccess(name: string, cursor: number): Promise<void>;

  /** A failed run: `failures` as given, no scheduled run for `backoffMs` from now. */
  recordFailure(name: string, failures: number, backoffMs: number): Promise<void>;

  /**
   * One statement: takes the workflow's lease for `ms` from now when it is free, expired
   * (database clock) or already `owner`'s. False when another owner holds it.
   */
  acquireLease(name: string, owner: string, ms: number): Promise<boolean>;

  /** One statement: extends `owner`'s lease to `ms` from now; false when it was lost to another owner. */
  renewLease(name: string, owner: string, ms: number): Promise<boolean>;

  /** One statement: lets the lease go if `owner` holds it. */
  releaseLease(name: string, owner: string): Promise<void>;

  /** Records a run that starts now (`running`). */
  startRun(run: { id: string; workflow: string; trigger: RunTrigger; dryRun: boolean }): Promise<void>;

  /** Records a run's end, now. */
  endRun(id: string, end: { status: RunStatus; error: string | null; handled: number }): Promise<void>;

  /** One statement: ends the real (not dry) runs a dead process left `running`, as errors with `error`; returns how many. */
  endInterruptedRuns(workflow: string, error: string): Promise<number>;

  /**
   * One statement: deletes the records of ended runs that started more than `ageMs` ago,
   * except those an event still refers to (`workflow.run_failed`); returns how many.
   */
  purgeRunsOlderThan(ageMs: number): Promise<number>;

  /** The runs that started last, newest first, at most `limit`. */
  recentRuns(workflow: string, limit: number): Promise<WorkflowRunRow[]>;

  /** A state value (JSON text). */
  getState(workflow: string, key: string): Promise<string | undefined>;

  /** One statement (upsert): sets a state value (JSON text). */
  setState(workflow: string, key: string, json: string): Promise<void>;

  deleteState(workflow: string, key: string): Promise<void>;
}

// ─── named leases ──────────────────────────────────────────────────────────────────────

/**
 * Leases by name that any process may take, e.g. the maintenance leader, so a task runs
 * in one process at a time. Workflows' own leases live on their rows (WorkflowRepository).
 */
export interface LeaseRepository {
  /**
   * One statement: takes or extends the lease `name` for `ms` from now when it is free,
   * expired (database clock) or already `owner`'s. False when another owner holds it.
   */
  acquire(name: string, owner: string, ms: number): Promise<boolean>;

  /** One statement: lets the lease go if `owner` holds it. */
  release(name: string, owner: string): Promise<void>;
}

// ─── API keys ──────────────────────────────────────────────────────────────────────────

export interface ApiKeyRow {
  id: string;
  /** Unique among keys in use; a revoked key's name may be given to a new key. */
  name: string;
  /** SHA-256 of the key, hex. The key itself is never stored. */
  hash: string;
  /** The first characters of the key, to recognise it in listings. */
  prefix: string;
  /** ms since the epoch. */
  createdAt: number;
  revokedAt: number | null;
}

export interface ApiKeyRepository {
  /**
   * One statement (INSERT … ON CONFLICT DO NOTHING): stores a key created now. Undefined
   * when a key in use already has that name.
   */
  create(key: Pick<ApiKeyRow, "id" | "name" | "hash" | "prefix">): Promise<ApiKeyRow | undefined>;

  /** Every key, revoked ones included, oldest first. */
  list(): Promise<ApiKeyRow[]>;

  /** One statement: revokes the key in use under `name`, now; false when there is none. */
  revoke(name: string): Promise<boolean>;

  countActive(): Promise<number>;

  /** The id of the key in use with this hash (hex): read on every request, so keep it one indexed lookup. */
  activeIdByHash(hash: string): Promise<string | undefined>;
}

// ─── console sessions ──────────────────────────────────────────────────────────────────

/** An operator console sign-in (src/auth/sessions.ts). */
export interface SessionRow {
  /** SHA-256 of the cookie token, hex. The token itself is never stored. */
  idHash: string;
  /** SHA-256 of the API key signed in with, hex: verified again on every request. */
  keyHash: string;
  csrfToken: string;
  /** ms since the epoch. */
  createdAt: number;
  expiresAt: number;
}

export interface SessionRepository {
  /** Stores a session created now that expires `ttlMs` from now (database clock); returns it. */
  create(session: Pick<SessionRow, "idHash" | "keyHash" | "csrfToken">, ttlMs: number): Promise<SessionRow>;

  /** The session with this hash while `expiresAt` is ahead (database clock); undefined otherwise. */
  getActive(idHash: string): Promise<SessionRow | undefined>;

  /** One statement: ends the session; false when there was none. */
  delete(idHash: string): Promise<boolean>;

  /** One statement: deletes the sessions that expired (database clock); returns how many. */
  purgeExpired(): Promise<number>;
}

// ─── generations ───────────────────────────────────────────────────────────────────────

/** A generated reply, sent or not. */
export interface GenerationRow {
  id: string;
  phone: string;
  body: string;
  model: string;
  language: string | null;
  /** ms since the epoch. */
  createdAt: number;
  /** The sent message, when the reply was sent. */
  messageId: string | null;
}

export interface GenerationRepository {
  insert(generation: Omit<GenerationRow, "messageId">): Promise<void>;
  /** Notes the message that sent the reply. */
  setMessage(id: string, messageId: string): Promise<void>;
}

// ─── network state ─────────────────────────────────────────────────────────────────────

/** Small values a network driver keeps (BlueBubbles' chat guids and catch-up cursor). */
export interface NetworkStateRepository {
  get(network: string, key: string): Promise<string | undefined>;
  /** One statement (upsert). */
  set(network: string, key: string, value: string): Promise<void>;
}

// ─── events and outbound webhooks ──────────────────────────────────────────────────────

/**
 * An event as stored. Events are written by the database itself in the transaction of
 * the change they report (triggers in the migrations): an inbound message stored
 * (`message.received`), an outbound message's status moved by an applied update
 * (`message.status_updated`), a real (not dry) workflow run ended as `error` or `timeout`
 * (`workflow.run_failed`). The same trigger queues a delivery for every enabled endpoint
 * subscribed to the type.
 */
export type EventRow =
  | {
      id: string;
      type: "message.received" | "message.status_updated";
      /** Microseconds since the epoch; unique and strictly increasing in commit order (the poll cursor rule). */
      timestamp: number;
      /** The message as it was at the event: status and error as the change left them. */
      message: RecordRow;
      /** Status events: the status before the change; null otherwise. */
      previousStatus: MessageStatus | null;
    }
  | {
      id: string;
      type: "workflow.run_failed";
      timestamp: number;
      run: WorkflowRunRow;
    };

export interface WebhookEndpointRow {
  /** `we_…` */
  id: string;
  url: string;
  /** Null: every event type. */
  events: EventType[] | null;
  description: string | null;
  enabled: boolean;
  /** Why Textwire disabled it (`gone`: the endpoint answered 410; `failing`: 5 days of failures); null when enabled or disabled by a client. */
  disabledReason: EndpointDisabledReason | null;
  /** `whsec_…` */
  secret: string;
  /** The secret before the last rotation, still signed with until `previousSecretUntil`. */
  previousSecret: string | null;
  /** ms since the epoch. */
  previousSecretUntil: number | null;
  /** The first failed attempt since the last success (ms); null when the last attempt succeeded or none was made. */
  failingSince: number | null;
  /** ms since the epoch. */
  createdAt: number;
  updatedAt: number;
}

/** One event's delivery to one endpoint, with its attempts so far. */
export interface DeliveryRow {
  /** `dlv_…` */
  id: string;
  endpointId: string;
  eventId: string;
  eventType: EventType;
  state: DeliveryState;
  /** Attempts made in the current series (a replay or a manual retry starts a new series). */
  attempts: number;
  /** HTTP status of the last attempt; null when it got no answer or none was made. */
  lastStatus: number | null;
  /** What went wrong on the last attempt (timeout, connection refused, blocked address, `HTTP 500`…). */
  lastError: string | null;
  /** ms since the epoch. */
  lastAttemptAt: number | null;
  /** When the next attempt is due (ms); null once succeeded or failed. */
  nextAttemptAt: number | null;
  createdAt: number;
}

/** A delivery leased to one process for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  delivery: DeliveryRow;
  endpoint: WebhookEndpointRow;
  event: EventRow;
}

/** How an attempt ended, as the domain decided (src/webhooks/deliverer.ts). */
export interface AttemptOutcome {
  state: DeliveryState;
  status: number | null;
  error: string | null;
  /** `pending` only: the next attempt is due this long from now (database clock). */
  retryInMs?: number;
}

export interface WebhookRepository {
  /** Stores an endpoint created now, enabled. */
  createEndpoint(endpoint: Pick<WebhookEndpointRow, "id" | "url" | "events" | "description" | "secret">): Promise<WebhookEndpointRow>;
  /** Oldest first. */
  listEndpoints(): Promise<WebhookEndpointRow[]>;
  getEndpoint(id: string): Promise<WebhookEndpointRow | undefined>;
  /**
   * Changes what is given. `enabled: true` also clears `disabledReason` and `failingSince`;
   * `enabled: false` sets `disabledReason` to null (a client's choice). Undefined when there is no such endpoint.
   */
  updateEndpoint(
    id: string,
    patch: Partial<Pick<WebhookEndpointRow, "url" | "events" | "description" | "enabled">>,
  ): Promise<WebhookEndpointRow | undefined>;
  /** Deletes the endpoint and its deliveries; false when there is none. */
  deleteEndpoint(id: string): Promise<boolean>;
  /** New secret; the current one becomes `previousSecret` until `keepPreviousMs` from now. */
  rotateSecret(id: string, secret: string, keepPreviousMs: number): Promise<WebhookEndpointRow | undefined>;

  /** Events with `timestamp > since`, oldest first, at most `limit`, of `type` when given; `hasMore` when more follow. */
  events(since: number, limit: number, type?: EventType): Promise<{ rows: EventRow[]; hasMore: boolean }>;

  /** An endpoint's deliveries, newest first (by creation), of `state` when given. */
  deliveries(endpointId: string, limit: number, state?: DeliveryState): Promise<DeliveryRow[]>;

  /**
   * One statement per delivery, safe across processes (PostgreSQL: FOR UPDATE SKIP LOCKED):
   * leases to `owner` for `leaseMs` up to `limit` deliveries that are pending, due
   * (`nextAttemptAt` <= now) and not leased (or leased with the lease expired), of enabled
   * endpoints not in `skipEndpoints`, at most `perEndpoint` of any one endpoint, earliest
   * due first. Returns them with their endpoint and event.
   */
  claimDue(owner: string, leaseMs: number, limit: number, perEndpoint: number, skipEndpoints: readonly string[]): Promise<ClaimedDelivery[]>;

  /**
   * One statement: records an attempt's outcome on a delivery `owner` still leases
   * (attempts + 1, last status, error and attempt time, the new state, the next attempt
   * from `retryInMs`, the lease let go). False when the lease was lost: nothing changes.
   */
  recordAttempt(deliveryId: string, owner: string, outcome: AttemptOutcome): Promise<boolean>;

  /** One statement: the endpoint's last attempt succeeded: `failingSince` cleared. */
  markSucceeding(endpointId: string): Promise<void>;

  /**
   * One statement: the endpoint's last attempt failed: `failingSince` set to now unless set.
   * When it was set more than `disableAfterMs` ago, the endpoint is disabled (`failing`); true then.
   */
  markFailing(endpointId: string, disableAfterMs: number): Promise<boolean>;

  /** One statement: disables the endpoint with that reason. */
  disableEndpoint(endpointId: string, reason: EndpointDisabledReason): Promise<void>;

  /**
   * Queues again, for this endpoint, every event with `timestamp > since` of the types it
   * subscribes to: each delivery (new or existing) pending, due now, a new series
   * (attempts 0), unleased. Returns how many.
   */
  replay(endpointId: string, since: number): Promise<number>;

  /** One delivery of that endpoint pending, due now, a new series; undefined when there is none. */
  retryNow(endpointId: string, deliveryId: string): Promise<DeliveryRow | undefined>;

  /**
   * One statement each: deletes deliveries not pending whose last change is older than
   * `ageMs`, then events older than `ageMs` that no delivery refers to any more (a pending
   * one, or a recent entry of the delivery log, keeps its event). Returns how many of each.
   */
  purgeOlderThan(ageMs: number): Promise<{ deliveries: number; events: number }>;
}

// ─── the storage ───────────────────────────────────────────────────────────────────────

export interface Repositories {
  readonly messages: MessageRepository;
  readonly contacts: ContactRepository;
  readonly idempotency: IdempotencyRepository;
  readonly workflows: WorkflowRepository;
  readonly leases: LeaseRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly sessions: SessionRepository;
  readonly generations: GenerationRepository;
  readonly networkState: NetworkStateRepository;
  readonly webhooks: WebhookRepository;
}

export interface Storage extends Repositories {
  readonly dialect: Dialect;

  /**
   * Runs `fn` in one transaction: all of it commits, or a throw rolls all of it back and
   * rethrows. Writes are serialised with every other writer from the first write (SQLite:
   * BEGIN IMMEDIATE; PostgreSQL: row locks, READ COMMITTED), and rows read with
   * `lockForDecision` or `lockForUpdate` stay locked until the end. See the rules above:
   * `fn` uses only `tx`.
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;

  /**
   * Whether the database takes a write now (GET /health): answers within 1.8 s, false
   * when it is read-only, locked for that long or unreachable. Never throws.
   */
  takesWrite(): Promise<boolean>;

  /** Closes the connection(s); the storage is not used afterwards. */
  close(): Promise<void>;
}
