import type { Database } from "bun:sqlite";
import type { SessionRepository, SessionRow } from "../port";
import type { Bindings, Sync } from "./gate";

const ROW = `id_hash AS idHash, key_hash AS keyHash, csrf_token AS csrfToken, created_at AS createdAt, expires_at AS expiresAt`;

/** The console_sessions table. `now` counts milliseconds. */
export function sqliteSessions(sqlite: Database, now: () => number): Sync<SessionRepository> {
  const create = sqlite.prepare<never, [Bindings<SessionRow>]>(
    `INSERT INTO console_sessions (id_hash, key_hash, csrf_token, created_at, expires_at) VALUES ($idHash, $keyHash, $csrfToken, $createdAt, $expiresAt)`,
  );
  const getActive = sqlite.prepare<SessionRow, [{ idHash: string; now: number }]>(
    `SELECT ${ROW} FROM console_sessions WHERE id_hash = $idHash AND expires_at > $now`,
  );
  const remove = sqlite.prepare<never, [{ idHash: string }]>(`DELETE FROM console_sessions WHERE id_hash = $idHash`);
  const purgeExpired = sqlite.prepare<never, [{ now: number }]>(`DELETE FROM console_sessions WHERE expires_at <= $now`);
  return {
    create(session, ttlMs) {
      const t = now();
      const row = { ...session, createdAt: t, expiresAt: t + ttlMs };
      create.run(row);
      return row;
    },
    getActive: (idHash) => getActive.get({ idHash, now: now() }) ?? undefined,
    delete: (idHash) => remove.run({ idHash }).changes > 0,
    purgeExpired: () => purgeExpired.run({ now: now() }).changes,
  };
}
