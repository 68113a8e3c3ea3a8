import type { Database } from "bun:sqlite";
import type { ApiKeyRepository, ApiKeyRow } from "../port";
import type { Bindings, Sync } from "./gate";

const ROW = `id, name, hash, prefix, created_at AS createdAt, revoked_at AS revokedAt`;

/** The api_keys table. `now` counts milliseconds. */
export function sqliteApiKeys(sqlite: Database, now: () => number): Sync<ApiKeyRepository> {
  // A key in use with the same name (a partial unique index) is a conflict: nothing stored.
  const create = sqlite.prepare<never, [Bindings<ApiKeyRow>]>(
    `INSERT INTO api_keys (id, name, hash, prefix, created_at, revoked_at) VALUES ($id, $name, $hash, $prefix, $createdAt, $revokedAt) ON CONFLICT DO NOTHING`,
  );
  const list = sqlite.prepare<ApiKeyRow, []>(`SELECT ${ROW} FROM api_keys ORDER BY created_at ASC, id ASC`);
  const revoke = sqlite.prepare<never, [{ name: string; now: number }]>(`UPDATE api_keys SET revoked_at = $now WHERE name = $name AND revoked_at IS NULL`);
  const countActive = sqlite.prepare<{ n: number }, []>(`SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL`);
  const activeByHash = sqlite.prepare<{ id: string }, [{ hash: string }]>(`SELECT id FROM api_keys WHERE hash = $hash AND revoked_at IS NULL`);
  return {
    create(key) {
      const row = { ...key, createdAt: now(), revokedAt: null };
      return create.run(row).changes === 1 ? row : undefined;
    },
    list: () => list.all(),
    revoke: (name) => revoke.run({ name, now: now() }).changes > 0,
    countActive: () => countActive.get()?.n ?? 0,
    activeIdByHash: (hash) => activeByHash.get({ hash })?.id,
  };
}
