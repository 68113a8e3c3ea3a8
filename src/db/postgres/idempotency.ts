import type { MessageStatus } from "../../vocabulary/message-status";
import type { IdempotencyDecisionRow, IdempotencyRepository } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `scope, key, fingerprint, state, response, message_id AS "messageId", locked_until AS "lockedUntil", created_at AS "createdAt"`;

const insertPending = statement(
  "idempotency.insertPending",
  `INSERT INTO idempotency_keys (scope, key, fingerprint, state, locked_until, created_at)
   VALUES ($1, $2, $3, 'pending', ${NOW_MS} + $4, ${NOW_MS}) ON CONFLICT DO NOTHING`,
);
// The key's row stays locked to the end of the transaction, so two requests with one key decide one after the other.
const decisionRow = statement<Omit<IdempotencyDecisionRow, "messageStatus">>(
  "idempotency.decisionRow",
  `SELECT ${ROW}, locked_until <= ${NOW_MS} AS "lockExpired", created_at <= ${NOW_MS} - $3 AS "ttlExpired"
   FROM idempotency_keys WHERE scope = $1 AND key = $2
   FOR UPDATE`,
);
// Read after the lock is held, in a statement of its own: a statement that waited for the
// lock sees the key's new row but other tables as they were when it began, so a message
// stored by the transaction it waited for would look absent.
const messageStatus = statement<{ status: MessageStatus }>("idempotency.messageStatus", `SELECT status FROM messages WHERE id = $1`);
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
    async lockForDecision(claim, ttlMs) {
      const row = (await run(decisionRow, [claim.scope, claim.key, ttlMs])).rows[0];
      if (!row) return undefined;
      const status = row.messageId === null ? undefined : (await run(messageStatus, [row.messageId])).rows[0]?.status;
      return { ...row, messageStatus: status ?? null };
    },
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
