import { and, eq, lt } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import { idempotencyKeys, messages } from "../db/schema";
import { AppError } from "../errors";

/** How long an answer is kept for replay (CONTRACT §6). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** One request's hold on an idempotency key. */
export interface Claim {
  scope: string;
  key: string;
}

export type Begun = { claim: Claim } | { replay: unknown };

const PRINTABLE = /^[\x20-\x7E]{1,255}$/;

export function checkIdempotencyKey(key: string): string {
  if (!PRINTABLE.test(key)) throw new AppError("BAD_REQUEST", "idempotency-key: must be 1 to 255 printable ASCII characters");
  return key;
}

/** The same route and the same (parsed) input give the same fingerprint. */
export function fingerprint(route: string, input: unknown): string {
  return createHash("sha256").update(`${route}\n${JSON.stringify(input)}`).digest("hex");
}

/**
 * Idempotency keys in the database, so they hold across restarts and across processes.
 * A key is begun (pending), linked to the message it sends, then completed with its
 * answer; a failure releases it, so a retry after a 5xx really retries.
 */
export function createIdempotencyStore(db: Db, now: () => number = Date.now) {
  const where = (c: Claim) => and(eq(idempotencyKeys.scope, c.scope), eq(idempotencyKeys.key, c.key));

  return {
    /**
     * Takes the key for a new request, or returns the answer to replay. Throws CONFLICT when
     * the key was used with another request, or while its first request is still running.
     * A pending key whose request died is taken over when nothing was sent (`lockMs` passed,
     * no message) or its message failed.
     */
    begin(claim: Claim, print: string, lockMs: number): Begun {
      return db.transaction(
        (tx) => {
          const t = now();
          let row = tx.select().from(idempotencyKeys).where(where(claim)).get();
          if (row && row.createdAt <= t - IDEMPOTENCY_TTL_MS) {
            tx.delete(idempotencyKeys).where(where(claim)).run();
            row = undefined;
          }
          if (!row) {
            tx.insert(idempotencyKeys)
              .values({ ...claim, fingerprint: print, state: "pending", lockedUntil: t + lockMs, createdAt: t })
              .run();
            return { claim };
          }
          if (row.fingerprint !== print) {
            throw new AppError("CONFLICT", "idempotency-key: already used with a different request; use a new key");
          }
          if (row.state === "done") return { replay: JSON.parse(row.response ?? "null") };
          const status = row.messageId
            ? tx.select({ status: messages.status }).from(messages).where(eq(messages.id, row.messageId)).get()?.status
            : undefined;
          if (row.messageId && (status === "sent" || status === "delivered")) {
            // Its process stopped after the network took the message: the answer stands.
            tx.update(idempotencyKeys).set({ state: "done" }).where(where(claim)).run();
            return { replay: JSON.parse(row.response ?? "null") };
          }
          const abandoned = row.messageId ? status === "failed" || status === undefined : row.lockedUntil <= t;
          if (!abandoned) {
            throw new AppError("CONFLICT", "idempotency-key: a request with this key is in progress; retry later");
          }
          tx.update(idempotencyKeys)
            .set({ messageId: null, response: null, lockedUntil: t + lockMs })
            .where(where(claim))
            .run();
          return { claim };
        },
        { behavior: "immediate" },
      );
    },

    /** Links the key to its stored message and the answer it will give; call in the message's transaction. */
    attach(claim: Claim, messageId: string, answer: unknown): void {
      db.update(idempotencyKeys).set({ messageId, response: JSON.stringify(answer) }).where(where(claim)).run();
    },

    complete(claim: Claim, answer: unknown): void {
      db.update(idempotencyKeys).set({ state: "done", response: JSON.stringify(answer) }).where(where(claim)).run();
    },

    /** Forgets a key whose request failed. */
    release(claim: Claim): void {
      db.delete(idempotencyKeys).where(and(where(claim), eq(idempotencyKeys.state, "pending"))).run();
    },

    /** Drops keys older than 24 hours; returns how many. */
    purgeExpired(): number {
      return db
        .delete(idempotencyKeys)
        .where(lt(idempotencyKeys.createdAt, now() - IDEMPOTENCY_TTL_MS))
        .returning({ key: idempotencyKeys.key })
        .all().length;
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;

/**
 * Runs `run` once per key: a replay returns the first answer without running it again;
 * a failure releases the key so that a retry runs again.
 */
export async function runIdempotent<T>(
  store: IdempotencyStore,
  claim: Claim,
  print: string,
  lockMs: number,
  run: (claim: Claim) => Promise<T>,
): Promise<{ answer: T; replayed: boolean }> {
  const begun = store.begin(claim, print, lockMs);
  if ("replay" in begun) return { answer: begun.replay as T, replayed: true };
  try {
    const answer = await run(begun.claim);
    store.complete(begun.claim, answer);
    return { answer, replayed: false };
  } catch (err) {
    store.release(begun.claim);
    throw err;
  }
}
