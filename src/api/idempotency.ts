import { checkIdempotencyKey, fingerprint, runIdempotent, type Claim } from "../messages/idempotency";
import type { Context } from "./trpc";

/**
 * A mutation behind the `Idempotency-Key` header (CONTRACT §6), scoped to the API key.
 * Without the header it simply runs. A replay is marked with `Idempotent-Replayed: true`.
 */
export async function idempotentMutation<T>(
  ctx: Context & { keyId: string },
  route: string,
  input: unknown,
  lockMs: number,
  run: (claim?: Claim) => Promise<T>,
): Promise<T> {
  const header = ctx.req.headers.get("idempotency-key");
  if (header === null) return run();
  const claim = { scope: `key:${ctx.keyId}`, key: checkIdempotencyKey(header) };
  const { answer, replayed } = await runIdempotent(ctx.app.idempotency, claim, fingerprint(route, input), lockMs, run);
  if (replayed) ctx.responseHeaders["Idempotent-Replayed"] = "true";
  return answer;
}
