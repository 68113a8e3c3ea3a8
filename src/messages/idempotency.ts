import { createHash } from "node:crypto";
import type { Claim, IdempotencyDecisionRow, Repositories, Storage } from "../db/port";
import { writeOrRetry } from "../background";
import { AppError, type ErrorDetails } from "../errors";
import type { Logger } from "../log";
import { UNKNOWN_OUTCOME } from "./service";

/** How long an answer is kept for replay (docs/api.md). */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

export type { Claim } from "../db/port";

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
 * Takes the key for a new request, or returns the answer to replay. Throws CONFLICT when
 * the key was used with another request, or while its first request is still running.
 * A pending key whose request died is taken over when nothing was sent (its lock passed,
 * no message) or its message failed. Keys live in the database, so this holds across
 * restarts and across processes: the decision is made on the key's row, locked.
 */
export async function beginIdempotent(storage: Storage, claim: Claim, print: string, lockMs: number): Promise<Begun> {
  return storage.transaction(async (tx) => {
    // The row may vanish between the two statements (released or purged by another process): then again.
    for (let attempt = 0; attempt < 3; attempt++) {
      if (await tx.idempotency.tryInsertPending(claim, print, lockMs)) return { claim };
      const row = await tx.idempotency.lockForDecision(claim, IDEMPOTENCY_TTL_MS);
      if (row) return decide(tx, claim, print, lockMs, row);
    }
    throw inProgress();
  });
}

const inProgress = () =>
  new AppError("CONFLICT", "idempotency-key: a request with this key is in progress; retry later", {}, { reason: "IDEMPOTENCY_KEY_IN_PROGRESS" });

/** The statuses of an attached message whose answer stands on a retry: it went out, or a person decides it (a draft, approved into scheduled, rejected). */
const ANSWER_STANDS = new Set<string>(["sent", "delivered", "draft", "rejected", "scheduled", "canceled"]);

/** The rules of a key already stored (docs/api.md "Idempotency"). */
async function decide(tx: Repositories, claim: Claim, print: string, lockMs: number, row: IdempotencyDecisionRow): Promise<Begun> {
  if (row.ttlExpired) {
    await tx.idempotency.retake(claim, lockMs, { fingerprint: print });
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
  const status = row.messageStatus;
  const attached: unknown = row.messageId ? JSON.parse(row.response ?? "null") : null;
  if (attached && typeof attached === "object" && "status" in attached && attached.status === "scheduled") {
    // A scheduled send is answered once stored: its process stopped before remembering
    // that answer, which stands whatever the message has become since.
    await tx.idempotency.markDone(claim, JSON.stringify(attached));
    return { replay: attached };
  }
  if (row.messageId && status !== null && ANSWER_STANDS.has(status)) {
    // Its process stopped after the network took the message, or after it was stored as a
    // draft (a person decides it, never a retry): the answer stands, with the status the
    // message has now (it was attached while still queued, or as the draft).
    const answer: unknown = JSON.parse(row.response ?? "null");
    if (answer && typeof answer === "object" && "status" in answer) (answer as { status: string }).status = status;
    await tx.idempotency.markDone(claim, JSON.stringify(answer));
    return { replay: answer };
  }
  if (row.messageId && status === "queued" && row.lockExpired) {
    // The send's outcome is unknown (or its process stopped): never sent again; the
    // answer follows the record.
    throw new AppError("GATEWAY_TIMEOUT", UNKNOWN_OUTCOME, {}, { message_id: row.messageId });
  }
  const abandoned = row.messageId ? status === "failed" || status === null : row.lockExpired;
  if (!abandoned) throw inProgress();
  await tx.idempotency.retake(claim, lockMs);
  return { claim };
}

/**
 * Runs `run` once per key: a replay returns the first answer without running it again;
 * a failure releases the key so that a retry runs again. Only successes are remembered.
 */
export async function runIdempotent<T>(
  storage: Storage,
  claim: Claim,
  print: string,
  lockMs: number,
  run: (claim: Claim) => Promise<T>,
  log: Logger,
): Promise<{ answer: T; replayed: boolean }> {
  const begun = await beginIdempotent(storage, claim, print, lockMs);
  const keys = storage.idempotency;
  if ("replay" in begun) return { answer: begun.replay as T, replayed: true };
  let answer: T;
  try {
    answer = await run(begun.claim);
  } catch (err) {
    // Freed when the failure is answered, so a retry right after it really retries; a send
    // whose outcome is unknown keeps its key (unlocked), so a retry never sends it again.
    const unknown = err instanceof AppError && err.code === "GATEWAY_TIMEOUT" && err.details.message_id !== undefined;
    await writeOrRetry(unknown ? "unlocking an idempotency key" : "freeing an idempotency key", () => (unknown ? keys.unlock(begun.claim) : keys.release(begun.claim)), log);
    throw err;
  }
  // The answer stands even when remembering it must wait: a retry also replays a key whose message was sent.
  await writeOrRetry("remembering an idempotent answer", () => keys.markDone(begun.claim, JSON.stringify(answer)), log);
  return { answer, replayed: false };
}
