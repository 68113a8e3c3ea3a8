import type { MessageStatus } from "../vocabulary/message-status";
import type { IdempotencyState } from "../vocabulary/messages";
import { choose, declare, run, sql } from "./sql";

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
  lockedUntil: number;
  createdAt: number;
}

/** A key's row as a decision needs it, with the facts computed by the database. */
export interface IdempotencyDecisionRow extends IdempotencyRow {
  /** Null when there is no message id or the message is gone. */
  messageStatus: MessageStatus | null;
  lockExpired: boolean;
  /** The row is older than the `ttlMs` given: it counts as absent. */
  ttlExpired: boolean;
}

/** Primitives of the idempotency rules in src/messages/idempotency.ts. */
export interface IdempotencyRepository {
  /** One statement (INSERT … ON CONFLICT DO NOTHING): a pending row locked for `lockMs`; true when this call inserted it. */
  tryInsertPending(claim: Claim, fingerprint: string, lockMs: number): Promise<boolean>;
  /**
   * The key's row, locked until the transaction ends (PostgreSQL: FOR UPDATE; SQLite's
   * write transaction holds every row), with its message's status. Call inside `transaction`.
   */
  lockForDecision(claim: Claim, ttlMs: number): Promise<IdempotencyDecisionRow | undefined>;
  /**
   * Takes the key over for a new attempt: no message, no answer, locked for `lockMs`. With
   * `fresh` (the old record outlived its TTL), it starts over as a new request: that fingerprint, pending, created now.
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
}

const ROW = `scope, key, fingerprint, state, response, message_id AS "messageId", locked_until AS "lockedUntil", created_at AS "createdAt"`;
const KEY = `scope = $scope AND key = $key`;

const insertPending = sql("idempotency.insertPending", `INSERT INTO idempotency_keys (scope, key, fingerprint, state, locked_until, created_at)
   VALUES ($scope, $key, $fingerprint, 'pending', {now_ms} + $lockMs, {now_ms}) ON CONFLICT DO NOTHING`);
/** The key's row, locked to the end of the transaction, so two requests with one key decide one after the other. */
export const decisionRow = sql<Omit<IdempotencyDecisionRow, "messageStatus" | "lockExpired" | "ttlExpired"> & { lockExpired: unknown; ttlExpired: unknown }>(
  "idempotency.decisionRow",
  `SELECT ${ROW}, locked_until <= {now_ms} AS "lockExpired", created_at <= {now_ms} - $ttlMs AS "ttlExpired"
   FROM idempotency_keys WHERE ${KEY} {for_update}`,
);
/**
 * Read after the lock is held, in a statement of its own: on PostgreSQL a statement that
 * waited for the lock sees the key's new row but other tables as they were when it began,
 * so a message stored by the transaction it waited for would look absent.
 */
export const messageStatus = sql<{ status: MessageStatus }>("idempotency.messageStatus", `SELECT status FROM messages WHERE id = $id`);
const retake = sql("idempotency.retake", `UPDATE idempotency_keys SET message_id = NULL, response = NULL, locked_until = {now_ms} + $lockMs WHERE ${KEY}`);
const restart = sql("idempotency.restart", `UPDATE idempotency_keys SET fingerprint = $fingerprint, state = 'pending', response = NULL, message_id = NULL,
     locked_until = {now_ms} + $lockMs, created_at = {now_ms}
   WHERE ${KEY}`);
const attach = sql("idempotency.attach", `UPDATE idempotency_keys SET message_id = $messageId, response = $response WHERE ${KEY}`);
const markDone = sql("idempotency.markDone", `UPDATE idempotency_keys SET state = 'done', response = $response WHERE ${KEY}`);
const unlock = sql("idempotency.unlock", `UPDATE idempotency_keys SET locked_until = {now_ms} WHERE ${KEY}`);
const release = sql("idempotency.release", `DELETE FROM idempotency_keys WHERE ${KEY} AND state = 'pending'`);

const key = (claim: Claim) => ({ scope: claim.scope, key: claim.key });

/** Every method but `lockForDecision`, whose two reads each dialect runs (src/db/sqlite/repositories.ts, src/db/postgres/repositories.ts). */
export const idempotency = declare<IdempotencyRepository>()({
  tryInsertPending: run(insertPending, (claim, fingerprint, lockMs) => ({ ...key(claim), fingerprint, lockMs }), (n) => n === 1),
  retake: run(
    choose([restart, retake], (_claim: Claim, _lockMs: number, fresh?: { fingerprint: string }) => (fresh ? restart : retake)),
    (claim: Claim, lockMs: number, fresh?: { fingerprint: string }) => ({ ...key(claim), lockMs, fingerprint: fresh?.fingerprint }),
  ),
  attach: run(attach, (claim, messageId, response) => ({ ...key(claim), messageId, response })),
  markDone: run(markDone, (claim, response) => ({ ...key(claim), response })),
  unlock: run(unlock, key),
  release: run(release, key),
});

/** The decision row as the port gives it. */
export const decision = (row: (typeof decisionRow)["row"] & object, status: MessageStatus | undefined): IdempotencyDecisionRow => ({
  ...row,
  lockExpired: Boolean(row.lockExpired),
  ttlExpired: Boolean(row.ttlExpired),
  messageStatus: status ?? null,
});
