import type { ApiKeyRepository, ApiKeyRow } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `id, name, hash, prefix, created_at AS "createdAt", revoked_at AS "revokedAt"`;

// A key in use with the same name (a partial unique index) is a conflict: nothing stored.
const create = statement<ApiKeyRow>(
  "apiKeys.create",
  `INSERT INTO api_keys (id, name, hash, prefix, created_at) VALUES ($1, $2, $3, $4, ${NOW_MS}) ON CONFLICT DO NOTHING RETURNING ${ROW}`,
);
const list = statement<ApiKeyRow>("apiKeys.list", `SELECT ${ROW} FROM api_keys ORDER BY created_at ASC, id ASC`);
const revoke = statement("apiKeys.revoke", `UPDATE api_keys SET revoked_at = ${NOW_MS} WHERE name = $1 AND revoked_at IS NULL`);
const countActive = statement<{ n: number }>("apiKeys.countActive", `SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL`);
const activeByHash = statement<{ id: string }>("apiKeys.activeByHash", `SELECT id FROM api_keys WHERE hash = $1 AND revoked_at IS NULL`);

/** The api_keys table; times from the database's clock. */
export function postgresApiKeys(run: Run): ApiKeyRepository {
  return {
    create: async (key) => (await run(create, [key.id, key.name, key.hash, key.prefix])).rows[0],
    list: async () => (await run(list, [])).rows,
    revoke: async (name) => ((await run(revoke, [name])).rowCount ?? 0) > 0,
    countActive: async () => (await run(countActive, [])).rows[0]?.n ?? 0,
    activeIdByHash: async (hash) => (await run(activeByHash, [hash])).rows[0]?.id,
  };
}
