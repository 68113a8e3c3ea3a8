import type { App } from "../app";
import { AppError } from "../errors";
import { rateLimitHeaders } from "./rate-limit";

const BEARER = /^bearer +(\S+) *$/i;

/**
 * The one auth step of a request, before its body is read: a valid API key within its
 * rate limit (`calls` tokens: one per procedure call, so a tRPC batch of N takes N).
 * Only failures count against the client address (20 a minute), and only failures are
 * refused by that count: a valid key always gets past it. Returns the key's id and the
 * headers the response carries; throws 401 or 429.
 */
export async function authenticate(
  app: App,
  req: Request,
  clientAddress: string,
  calls = 1,
): Promise<{ keyId: string; headers: Record<string, string> }> {
  const key = BEARER.exec(req.headers.get("authorization") ?? "")?.[1];
  const keyId = key ? await app.verifyKey(key) : null;
  if (!keyId) {
    const failures = app.authFailures.take(clientAddress);
    if (!failures.allowed) {
      throw new AppError("TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", {
        "Retry-After": String(failures.retryAfterSeconds),
      });
    }
    throw new AppError(
      "UNAUTHORIZED",
      key ? "authorization: invalid API key" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'",
      { "WWW-Authenticate": "Bearer" },
    );
  }
  if (!app.keyLimiter) return { keyId, headers: {} };
  const decision = app.keyLimiter.take(keyId, calls);
  const headers = rateLimitHeaders(decision);
  if (!decision.allowed) {
    const batch = calls > 1 ? ` (a batch of ${calls} calls takes ${calls}; ${decision.remaining} left)` : "";
    throw new AppError("TOO_MANY_REQUESTS", `rate limit exceeded${batch}; retry in ${decision.retryAfterSeconds} s`, headers);
  }
  return { keyId, headers };
}
