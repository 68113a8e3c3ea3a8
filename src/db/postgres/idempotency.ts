import type { IdempotencyDecisionRow, IdempotencyRepository } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `k.scope, k.key, k.fingerprint, k.state, k.response, k.message_id AS "messageId", k.locked_until AS "lockedUntil", k.created_at AS "createdAt"`;

const insertPending = statement(
  "idempotency.insertPending",
  `INSERT INTO idempotency_keys (scope, key, fingerprint, state, locked_until, created_at)
   VALUES ($1, $2, $3, 'pending', ${NOW_MS} + $4, ${NOW_MS}) ON CONFLICT DO NOTHING`,
);
// The key's row stays locked to the end of the transaction, so two requests with one key decide one after the other.
const decisionRow = statement<IdempotencyDecisionRow>(
  "idempotency.decisionRow",
  `SELECT ${ROW}, m.status AS "messageStatus", k.locked_until <= ${NOW_MS} AS "lockExpired", k.created_at <= ${NOW_MS} - $3 AS "ttlExpired"
   FROM idempotency_keys k LEFT JOIN messages m ON m.id = k.message_id
   WHERE k.scope = $1 AND k.key = $2
   FOR UPDATE OF k`,
);
const retake = statement(
  "idempotency.retake",
  `UPDATE idempotency_keys SET message_id = NULL, response = NULL, locked_until = ${NOW_MS} + $3 WHERE scope = $1 AND key = $2`,
);
const restart = statement(
  "idempotency.restart",
  `UPDATE idempotency_keys SET fingerprint = $3, state = 'pending', response = NULL, message_id = NULL, locked_until = ${NOW_MS} + $4, created_at = ${NOW_MS}
   WHERE scope = $1 AND key = $2`,
);
const attach = statement("idempotency.attach", `UPDATE idempotency_keys SET message_id = $3, response = $4 WHERE scope = $1 AND key = $2`);
const markDone = statement("idempotency.markDone", `UPDATE idempotency_keys SET state = 'done', response = $3 WHERE scope = $1 AND key = $2`);
const unlock = statement("idempotency.unlock", `UPDATE idempotency_keys SET locked_until = ${NOW_MS} WHERE scope = $1 AND key = $2`);
const release = statement("idempotency.release", `DELETE FROM idempotency_keys WHERE scope = $1 AND key = $2 AND state = 'pending'`);
const purge = statement("idempotency.purge", `DELETE FROM idempotency_keys WHERE created_at < ${NOW_MS} - $1`);

/** The idempotency_keys table, timed by the database's clock. */
export function postgresIdempotency(run: Run): IdempotencyRepository {
  return {
    tryInsertPending: async (claim, fingerprint, lockMs) => (await run(insertPending, [claim.scope, claim.key, fingerprint, lockMs])).rowCount === 1,
    lockForDecision: async (claim, ttlMs) => (await run(decisionRow, [claim.scope, claim.key, ttlMs])).rows[0],
    async retake(claim, lockMs, fresh) {
      if (fresh) await run(restart, [claim.scope, claim.key, fresh.fingerprint, lockMs]);
      else await run(retake, [claim.scope, claim.key, lockMs]);
    },
    attach: async (claim, messageId, response) => void (await run(attach, [claim.scope, claim.key, messageId, response])),
    markDone: async (claim, response) => void (await run(markDone, [claim.scope, claim.key, response])),
    unlock: async (claim) => void (await run(unlock, [claim.scope, claim.key])),
    release: async (claim) => void (await run(release, [claim.scope, claim.key])),
    purgeExpired: async (ttlMs) => (await run(purge, [ttlMs])).rowCount ?? 0,
  };
}
