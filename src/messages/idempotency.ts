import { and, eq, lt } from "drizzle-orm";
import { createHash } from "node:crypto";
import type { Db } from "../db/client";
import { idempotencyKeys, messages } from "../db/schema";
import { writeOrRetry } from "../background";
import { AppError, type ErrorDetails } from "../errors";
import type { Logger } from "../log";
import { UNKNOWN_OUTCOME } from "./service";

/** How long an answer is kept for replay (docs/api.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** One request's hold on an idempotency key. */
export interface Claim {
  scope: string;
  key: string;
}

export type Begun = { claim: Claim } | { replay: unknown };

/** An `Idempotency-Key`: 1 to 255 printable ASCII characters (space included). */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x20-\x7E]{1,255}$/;

export function checkIdempotencyKey(key: string): string {
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw new AppError("BAD_REQUEST", "idempotency-key: must be 1 to 255 printable ASCII characters");
  return key;
}

/** The same route and the same (parsed) input give the same fingerprint. */
export function fingerprint(route: string, input: unknown): string {
  return createHash("sha256").update(`${route}\n${JSON.stringify(input)}`).digest("hex");
}

/** The message of a stored answer (`message_id`, `timestamp`, `status`), as far as it names one. */
function answeredMessage(response: string | null): ErrorDetails {
  let answer: unknown;
  try {
    answer = JSON.parse(response ?? "null");
  } catch {
    return {};
  }
  if (typeof answer !== "object" || answer === null) return {};
  const a = answer as Record<string, unknown>;
  const id = typeof a.message_id === "string" ? a.message_id : typeof a.id === "string" ? a.id : undefined;
  if (!id) return {};
  return {
    message_id: id,
    ...(typeof a.timestamp === "string" ? { timestamp: a.timestamp } : {}),
    ...(typeof a.status === "string" ? { status: a.status } : {}),
  };
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
            // The first request's answered message, so a client that meant "at most once" can use it.
            const first = row.state === "done" ? answeredMessage(row.response) : {};
            throw new AppError("CONFLICT", "idempotency-key: already used with a different request; use a new key", {}, {
              reason: "IDEMPOTENCY_KEY_REUSED",
              ...first,
            });
          }
          if (row.state === "done") return { replay: JSON.parse(row.response ?? "null") };
          const status = row.messageId
            ? tx.select({ status: messages.status }).from(messages).where(eq(messages.id, row.messageId)).get()?.status
            : undefined;
          if (row.messageId && (status === "sent" || status === "delivered")) {
            // Its process stopped after the network took the message: the answer stands,
            // with the status the message has now (it was attached while still queued).
            const answer: unknown = JSON.parse(row.response ?? "null");
            if (answer && typeof answer === "object" && "status" in answer) (answer as { status: string }).status = status;
            tx.update(idempotencyKeys).set({ state: "done", response: JSON.stringify(answer) }).where(where(claim)).run();
            return { replay: answer };
          }
          if (row.messageId && status === "queued" && row.lockedUntil <= t) {
            // The send's outcome is unknown (or its process stopped): never sent again; the
            // answer follows the record.
            throw new AppError("GATEWAY_TIMEOUT", UNKNOWN_OUTCOME, {}, { message_id: row.messageId });
          }
          const abandoned = row.messageId ? status === "failed" || status === undefined : row.lockedUntil <= t;
          if (!abandoned) {
            throw new AppError("CONFLICT", "idempotency-key: a request with this key is in progress; retry later", {}, {
              reason: "IDEMPOTENCY_KEY_IN_PROGRESS",
            });
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

    /** Keeps a key whose send has an unknown outcome; its lock ends now, so a retry is answered from the record. */
    unlock(claim: Claim): void {
      db.update(idempotencyKeys).set({ lockedUntil: now() }).where(where(claim)).run();
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
 * a failure releases the key so that a retry runs again. Only successes are remembered.
 */
export async function runIdempotent<T>(
  store: IdempotencyStore,
  claim: Claim,
  print: string,
  lockMs: number,
  run: (claim: Claim) => Promise<T>,
  log: Logger,
): Promise<{ answer: T; replayed: boolean }> {
  const begun = store.begin(claim, print, lockMs);
  if ("replay" in begun) return { answer: begun.replay as T, replayed: true };
  let answer: T;
  try {
    answer = await run(begun.claim);
  } catch (err) {
    // Freed when the failure is answered, so a retry right after it really retries; a send
    // whose outcome is unknown keeps its key (unlocked), so a retry never sends it again.
    const unknown = err instanceof AppError && err.code === "GATEWAY_TIMEOUT" && err.details.message_id !== undefined;
    writeOrRetry(unknown ? "unlocking an idempotency key" : "freeing an idempotency key", () => (unknown ? store.unlock(begun.claim) : store.release(begun.claim)), log);
    throw err;
  }
  // The answer stands even when remembering it must wait: begin() also replays a key whose message was sent.
  writeOrRetry("remembering an idempotent answer", () => store.complete(begun.claim, answer), log);
  return { answer, replayed: false };
}
