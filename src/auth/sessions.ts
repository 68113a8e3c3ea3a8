import { randomBytes, timingSafeEqual } from "node:crypto";
import type { App } from "../app";
import { AppError } from "../errors";
import { hashKey } from "./keys";
import type { KeyAuth } from "./policy";

/** How long a console session lasts from sign-in (the cookie's Max-Age too). */
export const SESSION_TTL_MS = 12 * 60 * 60_000;

/** A session token or CSRF token: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const newToken = () => randomBytes(32).toString("base64url");
const hex = (value: string) => hashKey(value).toString("hex");

type Deps = Pick<App, "storage" | "verifyKey">;

export interface SignedIn {
  /** The cookie's value: given to the browser once, only its hash is stored. */
  token: string;
  csrfToken: string;
  /** ISO 8601, UTC. */
  expiresAt: string;
}

export interface LiveSession {
  /** The signed-in key: the session holds its scopes and limits, no more. */
  key: KeyAuth;
  csrfToken: string;
  expiresAt: string;
}

/**
 * Exchanges an API key for a console session lasting SESSION_TTL_MS (its expiry from the
 * database's clock). Throws 401 naming `key` when the key does not verify.
 */
export async function signIn(app: Deps, key: string): Promise<SignedIn> {
  if (!(await app.verifyKey(key))) throw new AppError("UNAUTHORIZED", "key: not a valid API key", { "WWW-Authenticate": "Bearer" });
  const token = newToken();
  const row = await app.storage.sessions.create({ idHash: hex(token), keyHash: hex(key), csrfToken: newToken() }, SESSION_TTL_MS);
  return { token, csrfToken: row.csrfToken, expiresAt: new Date(row.expiresAt).toISOString() };
}

/**
 * The session a cookie token names, while it lives and its key still verifies (the key is
 * checked from its hash on every call, so revoking it ends its sessions at once); else null.
 */
export async function sessionAuth(app: Deps, token: string): Promise<LiveSession | null> {
  if (!TOKEN.test(token)) return null;
  const row = await app.storage.sessions.getActive(hex(token));
  if (!row) return null;
  const key = await app.verifyKey.byHash(row.keyHash);
  return key ? { key, csrfToken: row.csrfToken, expiresAt: new Date(row.expiresAt).toISOString() } : null;
}

/** Ends the session a cookie token names, on the server: the cookie is worthless from now on. */
export async function signOut(app: Deps, token: string): Promise<void> {
  if (TOKEN.test(token)) await app.storage.sessions.delete(hex(token));
}

/** Whether a presented CSRF token is the session's, compared in constant time (as hashes, so lengths never differ). */
export function csrfMatches(session: LiveSession, presented: string): boolean {
  return timingSafeEqual(hashKey(presented), hashKey(session.csrfToken));
}
