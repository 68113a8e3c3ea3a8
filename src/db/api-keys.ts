import { all, declare, get, run, sql } from "./sql";

export interface ApiKeyRow {
  id: string;
  /** Unique among keys in use; a revoked key's name may be given to a new key. */
  name: string;
  /** SHA-256 of the key, hex. The key itself is never stored. */
  hash: string;
  /** The first characters of the key, to recognise it in listings. */
  prefix: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface ApiKeyRepository {
  /** One statement (INSERT … ON CONFLICT DO NOTHING): a key created now; undefined when a key in use has that name. */
  create(key: Pick<ApiKeyRow, "id" | "name" | "hash" | "prefix">): Promise<ApiKeyRow | undefined>;
  /** Every key, revoked ones included, oldest first. */
  list(): Promise<ApiKeyRow[]>;
  /** One statement: revokes the key in use under `name`, now; false when there is none. */
  revoke(name: string): Promise<boolean>;
  countActive(): Promise<number>;
  /** Read on every request: one indexed lookup. */
  activeIdByHash(hash: string): Promise<string | undefined>;
}

const ROW = `id, name, hash, prefix, created_at AS "createdAt", revoked_at AS "revokedAt"`;

// A key in use with the same name (a partial unique index) is a conflict: nothing stored.
const create = sql<ApiKeyRow>(
  "apiKeys.create",
  `INSERT INTO api_keys (id, name, hash, prefix, created_at) VALUES ($id, $name, $hash, $prefix, {now_ms}) ON CONFLICT DO NOTHING RETURNING ${ROW}`,
);
const list = sql<ApiKeyRow>("apiKeys.list", `SELECT ${ROW} FROM api_keys ORDER BY created_at ASC, id ASC`);
const revoke = sql("apiKeys.revoke", `UPDATE api_keys SET revoked_at = {now_ms} WHERE name = $name AND revoked_at IS NULL`);
const countActive = sql<{ n: number }>("apiKeys.countActive", `SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL`);
const activeByHash = sql<{ id: string }>("apiKeys.activeByHash", `SELECT id FROM api_keys WHERE hash = $hash AND revoked_at IS NULL`);

export const apiKeys = declare<ApiKeyRepository>()({
  create: get(create, (key) => ({ id: key.id, name: key.name, hash: key.hash, prefix: key.prefix })),
  list: all(list, () => ({})),
  revoke: run(revoke, (name) => ({ name }), (n) => n > 0),
  countActive: get(countActive, () => ({}), (row) => Number(row?.n ?? 0)),
  activeIdByHash: get(activeByHash, (hash) => ({ hash }), (row) => row?.id),
});
