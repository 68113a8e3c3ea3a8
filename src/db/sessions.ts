import { declare, get, run, sql } from "./sql";

/** An operator console sign-in (src/auth/sessions.ts). */
export interface SessionRow {
  /** SHA-256 of the cookie token, hex. The token itself is never stored. */
  idHash: string;
  /** SHA-256 of the API key signed in with, hex: verified again on every request. */
  keyHash: string;
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

export interface SessionRepository {
  /** Stores a session created now that expires `ttlMs` from now; returns it. */
  create(session: Pick<SessionRow, "idHash" | "keyHash" | "csrfToken">, ttlMs: number): Promise<SessionRow>;
  /** The session while `expiresAt` is ahead; undefined otherwise. */
  getActive(idHash: string): Promise<SessionRow | undefined>;
  /** One statement: ends the session; false when there was none. */
  delete(idHash: string): Promise<boolean>;
}

const ROW = `id_hash AS "idHash", key_hash AS "keyHash", csrf_token AS "csrfToken", created_at AS "createdAt", expires_at AS "expiresAt"`;

const create = sql<SessionRow>("sessions.create", `INSERT INTO console_sessions (id_hash, key_hash, csrf_token, created_at, expires_at)
   VALUES ($idHash, $keyHash, $csrfToken, {now_ms}, {now_ms} + $ttlMs) RETURNING ${ROW}`);
const getActive = sql<SessionRow>("sessions.getActive", `SELECT ${ROW} FROM console_sessions WHERE id_hash = $idHash AND expires_at > {now_ms}`);
const remove = sql("sessions.delete", `DELETE FROM console_sessions WHERE id_hash = $idHash`);

export const sessions = declare<SessionRepository>()({
  create: get(create, (s, ttlMs) => ({ idHash: s.idHash, keyHash: s.keyHash, csrfToken: s.csrfToken, ttlMs }), (row) => row!),
  getActive: get(getActive, (idHash) => ({ idHash })),
  delete: run(remove, (idHash) => ({ idHash }), (n) => n > 0),
});
