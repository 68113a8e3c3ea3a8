import type { SessionRepository, SessionRow } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `id_hash AS "idHash", key_hash AS "keyHash", csrf_token AS "csrfToken", created_at AS "createdAt", expires_at AS "expiresAt"`;

const create = statement<SessionRow>(
  "sessions.create",
  `INSERT INTO console_sessions (id_hash, key_hash, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, ${NOW_MS}, ${NOW_MS} + $4) RETURNING ${ROW}`,
);
const getActive = statement<SessionRow>("sessions.getActive", `SELECT ${ROW} FROM console_sessions WHERE id_hash = $1 AND expires_at > ${NOW_MS}`);
const remove = statement("sessions.delete", `DELETE FROM console_sessions WHERE id_hash = $1`);
const purgeExpired = statement("sessions.purgeExpired", `DELETE FROM console_sessions WHERE expires_at <= ${NOW_MS}`);

/** The console_sessions table, timed by the database's clock. */
export function postgresSessions(run: Run): SessionRepository {
  return {
    create: async (session, ttlMs) => (await run(create, [session.idHash, session.keyHash, session.csrfToken, ttlMs])).rows[0]!,
    getActive: async (idHash) => (await run(getActive, [idHash])).rows[0],
    delete: async (idHash) => ((await run(remove, [idHash])).rowCount ?? 0) > 0,
    purgeExpired: async () => (await run(purgeExpired, [])).rowCount ?? 0,
  };
}
