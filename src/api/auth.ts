import type { App } from "../app";
import type { KeyAuth } from "../auth/policy";
import { csrfMatches, sessionAuth, type LiveSession } from "../auth/sessions";
import { AppError } from "../errors";
import { rateLimitHeaders } from "./rate-limit";

const BEARER = /^bearer +(\S+) *$/i;
/** The console's session cookie (src/api/console.ts sets it). */
export const SESSION_COOKIE = "textwire_session";
const SESSION_COOKIE_VALUE = new RegExp(`(?:^|;)\\s*${SESSION_COOKIE}=([^;]*)`);

/**
 * A failed authentication, counted against the client address (20 a minute): `error`,
 * or 429 once the address is past that count.
 */
export function authFailure(app: Pick<App, "authFailures">, clientAddress: string, error: AppError): AppError {
  return throttledFailure(app, clientAddress) ?? error;
}

/**
 * Counts one failed authentication of any kind (an API key, a console sign-in, a network
 * webhook's secret or signature, the metrics token) against the client address: 429 once
 * the address is past 20 a minute, else null (the caller answers its own refusal).
 */
export function throttledFailure(app: Pick<App, "authFailures">, clientAddress: string): AppError | null {
  const failures = app.authFailures.take(clientAddress);
  if (failures.allowed) return null;
  return new AppError("TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", {
    "Retry-After": String(failures.retryAfterSeconds),
  });
}

/** The session cookie's value, or undefined when the request has none (or an empty one, as a cleared cookie may linger). */
function sessionToken(req: Request): string | undefined {
  return SESSION_COOKIE_VALUE.exec(req.headers.get("cookie") ?? "")?.[1]?.trim() || undefined;
}

/**
 * The live console session of the request's cookie: undefined without a cookie; a cookie
 * that names no live session (expired, signed out, its key revoked) is a counted 401.
 */
export async function cookieSession(app: App, req: Request, clientAddress: string): Promise<(LiveSession & { token: string }) | undefined> {
  const token = sessionToken(req);
  if (token === undefined) return undefined;
  const session = await sessionAuth(app, token);
  if (session) return { ...session, token };
  throw authFailure(app, clientAddress, new AppError("UNAUTHORIZED", "session: expired or signed out; sign in again", { "WWW-Authenticate": "Bearer" }));
}

/**
 * A state-changing request on a session must come from the server's own pages: `Origin`
 * one of its own and `X-CSRF-Token` the session's, else 403. Safe methods pass.
 */
export function checkCsrf(req: Request, session: LiveSession, isOwnOrigin: (origin: string) => boolean): void {
  if (req.method === "GET" || req.method === "HEAD") return;
  const origin = req.headers.get("origin");
  if (origin === null || !isOwnOrigin(origin)) {
    throw new AppError("FORBIDDEN", origin === null ? "origin: missing; a console request must come from the server's own pages" : "origin: not this server's own origin");
  }
  const presented = req.headers.get("x-csrf-token");
  if (presented === null || !csrfMatches(session, presented)) {
    throw new AppError("FORBIDDEN", presented === null ? "x-csrf-token: missing header" : "x-csrf-token: does not match the session's token");
  }
}

/** Why an Authorization header gave no key: none sent, another scheme (`Basic …`), or `Bearer` alone. */
function noKeyMessage(authorization: string | null): string {
  const scheme = /^\s*([!#$%&'*+.^_`|~\w-]{1,20})(?:\s|$)/.exec(authorization ?? "")?.[1];
  if (!scheme) return authorization?.trim() ? "authorization: must be 'Bearer <API_KEY>'" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'";
  if (scheme.toLowerCase() !== "bearer") return `authorization: the scheme must be Bearer, not ${scheme}: 'Authorization: Bearer <API_KEY>'`;
  return "authorization: expected one API key after Bearer: 'Authorization: Bearer <API_KEY>'";
}

export interface AuthOptions {
  /** Rate-limit tokens the request takes: one per procedure call, so a tRPC batch of N takes N. */
  calls?: number;
  /** Given where a console session cookie may stand in for the key: whether an Origin is the server's own. */
  isOwnOrigin?: (origin: string) => boolean;
}

/**
 * The one auth step of a request, before its body is read: a valid API key within its
 * rate limit, or, where `isOwnOrigin` is given and no Authorization header is sent, a
 * console session (as its key, same rate limit; its state-changing requests pass
 * checkCsrf). Only failures count against the client address (20 a minute), and only
 * failures are refused by that count: a valid key always gets past it. Returns the key
 * (its id, scopes and limits) and the headers the response carries; throws 401, 403 or 429.
 */
export async function authenticate(app: App, req: Request, clientAddress: string, opts: AuthOptions = {}): Promise<{ key: KeyAuth; headers: Record<string, string> }> {
  const calls = opts.calls ?? 1;
  const authorization = req.headers.get("authorization");
  const { isOwnOrigin } = opts;
  const session = isOwnOrigin && authorization === null ? await cookieSession(app, req, clientAddress) : undefined;
  let verified: KeyAuth | null;
  if (session && isOwnOrigin) {
    checkCsrf(req, session, isOwnOrigin);
    verified = session.key;
  } else {
    const key = BEARER.exec(authorization ?? "")?.[1];
    verified = key ? await app.verifyKey(key) : null;
    if (!verified) {
      throw authFailure(
        app,
        clientAddress,
        new AppError(
          "UNAUTHORIZED",
          key ? "authorization: invalid API key" : noKeyMessage(authorization),
          { "WWW-Authenticate": "Bearer" },
        ),
      );
    }
  }
  return { key: verified, headers: takeRateLimit(app, verified.id, calls) };
}

/**
 * Takes `calls` tokens from the key's bucket (all or none): the RateLimit headers the
 * response carries, or 429 with them and Retry-After.
 */
export function takeRateLimit(app: App, keyId: string, calls: number): Record<string, string> {
  if (!app.keyLimiter) return {};
  const decision = app.keyLimiter.take(keyId, calls);
  const headers = rateLimitHeaders(decision);
  if (!decision.allowed) {
    const batch = calls > 1 ? ` (a batch of ${calls} calls takes ${calls}; ${decision.remaining} left)` : "";
    throw new AppError("TOO_MANY_REQUESTS", `rate limit exceeded${batch}; retry in ${decision.retryAfterSeconds} s`, headers);
  }
  return headers;
}
