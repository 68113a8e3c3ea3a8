import { z } from "zod";
import { checkIdempotencyKey, fingerprint, IDEMPOTENCY_KEY_PATTERN, runIdempotent, type Claim } from "../messages/idempotency";
import type { Context } from "./trpc";

/**
 * A mutation behind the `Idempotency-Key` header (docs/api.md), scoped to the API key.
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
  const { answer, replayed } = await runIdempotent(ctx.app.storage, claim, fingerprint(route, input), lockMs, run, ctx.app.log);
  if (replayed) ctx.responseHeaders["Idempotent-Replayed"] = "true";
  return answer;
}

/** The `Idempotency-Key` request header, for the OpenAPI document (checked by checkIdempotencyKey). */
export const idempotencyKeyHeader = z.object({
  "Idempotency-Key": z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN)
    .meta({
      description:
        "1 to 255 printable ASCII characters, chosen by the client (a UUID is fine), scoped to the API key. A retry with the same key and the same body within 24 hours sends nothing new and answers the first success again (`Idempotent-Replayed: true`); the same key with another body is 409. A key whose request failed is free again at once.",
      example: "order-1234-confirmation",
    })
    .optional(),
});
