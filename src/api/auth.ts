import type { App } from "../app";
import { AppError } from "../errors";
import { rateLimitHeaders } from "./rate-limit";

const BEARER = /^bearer +(\S+) *$/i;

/**
 * The API key of a request, checked before anything else is read: from an address that
 * has not failed too often, a valid key, within its rate limit. Returns the key's id and
 * the headers the response carries; throws 401 or 429.
 */
export function authenticate(app: App, req: Request, ip: string): { keyId: string; headers: Record<string, string> } {
  const blocked = app.authFailures.peek(ip);
  if (!blocked.allowed) {
    throw new AppError("TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", {
      "Retry-After": String(blocked.retryAfterSeconds),
    });
  }
  const key = BEARER.exec(req.headers.get("authorization") ?? "")?.[1];
  const keyId = key ? app.verifyKey(key) : null;
  if (!keyId) {
    app.authFailures.take(ip);
    throw new AppError(
      "UNAUTHORIZED",
      key ? "authorization: invalid API key" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'",
      { "WWW-Authenticate": "Bearer" },
    );
  }
  if (!app.keyLimiter) return { keyId, headers: {} };
  const decision = app.keyLimiter.take(keyId);
  const headers = rateLimitHeaders(decision);
  if (!decision.allowed) throw new AppError("TOO_MANY_REQUESTS", `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`, headers);
  return { keyId, headers };
}
