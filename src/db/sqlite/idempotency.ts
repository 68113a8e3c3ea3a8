import type { Database } from "bun:sqlite";
import type { Claim, IdempotencyDecisionRow, IdempotencyRepository } from "../port";
import type { Bindings, Sync } from "./gate";

const ROW = `k.scope, k.key, k.fingerprint, k.state, k.response, k.message_id AS messageId, k.locked_until AS lockedUntil, k.created_at AS createdAt`;

type Flags<T> = Omit<T, "lockExpired" | "ttlExpired"> & { lockExpired: number; ttlExpired: number };

/** The idempotency_keys table. `now` counts milliseconds. */
export function sqliteIdempotency(sqlite: Database, now: () => number): Sync<IdempotencyRepository> {
  const insertPending = sqlite.prepare<never, [Bindings<Claim & { fingerprint: string; lockedUntil: number; now: number }>]>(
    `INSERT INTO idempotency_keys (scope, key, fingerprint, state, locked_until, created_at)
     VALUES ($scope, $key, $fingerprint, 'pending', $lockedUntil, $now) ON CONFLICT DO NOTHING`,
  );
  // SQLite's write transaction (BEGIN IMMEDIATE) already holds every row: a plain read.
  const decisionRow = sqlite.prepare<Flags<IdempotencyDecisionRow>, [Bindings<Claim & { now: number; ttlMs: number }>]>(
    `SELECT ${ROW}, m.status AS messageStatus, k.locked_until <= $now AS lockExpired, k.created_at <= $now - $ttlMs AS ttlExpired
     FROM idempotency_keys k LEFT JOIN messages m ON m.id = k.message_id
     WHERE k.scope = $scope AND k.key = $key`,
  );
  const retake = sqlite.prepare<never, [Bindings<Claim & { lockedUntil: number }>]>(
    `UPDATE idempotency_keys SET message_id = NULL, response = NULL, locked_until = $lockedUntil WHERE scope = $scope AND key = $key`,
  );
  const restart = sqlite.prepare<never, [Bindings<Claim & { fingerprint: string; lockedUntil: number; now: number }>]>(
    `UPDATE idempotency_keys SET fingerprint = $fingerprint, state = 'pending', response = NULL, message_id = NULL, locked_until = $lockedUntil, created_at = $now
     WHERE scope = $scope AND key = $key`,
  );
  const attach = sqlite.prepare<never, [Bindings<Claim & { messageId: string; response: string }>]>(
    `UPDATE idempotency_keys SET message_id = $messageId, response = $response WHERE scope = $scope AND key = $key`,
  );
  const markDone = sqlite.prepare<never, [Bindings<Claim & { response: string }>]>(
    `UPDATE idempotency_keys SET state = 'done', response = $response WHERE scope = $scope AND key = $key`,
  );
  const unlock = sqlite.prepare<never, [Bindings<Claim & { now: number }>]>(
    `UPDATE idempotency_keys SET locked_until = $now WHERE scope = $scope AND key = $key`,
  );
  const release = sqlite.prepare<never, [Bindings<Claim>]>(`DELETE FROM idempotency_keys WHERE scope = $scope AND key = $key AND state = 'pending'`);
  const purge = sqlite.prepare<never, [{ before: number }]>(`DELETE FROM idempotency_keys WHERE created_at < $before`);

  return {
    tryInsertPending(claim, fingerprint, lockMs) {
      const t = now();
      return insertPending.run({ scope: claim.scope, key: claim.key, fingerprint, lockedUntil: t + lockMs, now: t }).changes === 1;
    },

    lockForDecision(claim, ttlMs) {
      const row = decisionRow.get({ scope: claim.scope, key: claim.key, now: now(), ttlMs });
      return row ? { ...row, lockExpired: row.lockExpired === 1, ttlExpired: row.ttlExpired === 1 } : undefined;
    },

    retake(claim, lockMs, fresh) {
      const t = now();
      const where = { scope: claim.scope, key: claim.key };
      if (fresh) restart.run({ ...where, fingerprint: fresh.fingerprint, lockedUntil: t + lockMs, now: t });
      else retake.run({ ...where, lockedUntil: t + lockMs });
    },

    attach: (claim, messageId, response) => void attach.run({ scope: claim.scope, key: claim.key, messageId, response }),

    markDone: (claim, response) => void markDone.run({ scope: claim.scope, key: claim.key, response }),

    unlock: (claim) => void unlock.run({ scope: claim.scope, key: claim.key, now: now() }),

    release: (claim) => void release.run({ scope: claim.scope, key: claim.key }),

    purgeExpired: (ttlMs) => purge.run({ before: now() - ttlMs }).changes,
  };
}
