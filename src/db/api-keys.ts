import type { Reach } from "../vocabulary/scopes";
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
  /** Space-separated scopes; `*` is every scope. */
  scopes: string;
  /** Space-separated line ids it may use; null: every line. */
  lines: string | null;
  reach: Reach;
  /** ms; null: never. */
  expiresAt: number | null;
  /** The key that made it (`env:N` for an API_KEYS key); null for the CLI and the first key. */
  createdBy: string | null;
  /** ms, kept to within a minute; null: never used. */
  lastUsedAt: number | null;
}

export type NewApiKey = Pick<ApiKeyRow, "id" | "name" | "hash" | "prefix" | "scopes" | "lines" | "reach" | "expiresAt" | "createdBy">;

export interface ApiKeyRepository {
  /** One statement (INSERT … ON CONFLICT DO NOTHING): a key created now; undefined when a key in use has that name. */
  create(key: NewApiKey): Promise<ApiKeyRow | undefined>;
  /** Every key, revoked ones included, oldest first. */
  list(): Promise<ApiKeyRow[]>;
  /** The key in use whose id or name this is. */
  activeByIdOrName(idOrName: string): Promise<ApiKeyRow | undefined>;
  /** One statement: revokes the key in use with this id, now; the revoked row, or undefined when there is none. */
  revoke(id: string): Promise<ApiKeyRow | undefined>;
  countActive(): Promise<number>;
  /** Read on every request: one indexed lookup of a key in use and not expired (by the database's clock). */
  activeByHash(hash: string): Promise<ApiKeyRow | undefined>;
  /** Sets last_used_at to now when it is older than a minute (or unset). */
  touch(id: string): Promise<void>;
}

const ROW = `id, name, hash, prefix, created_at AS "createdAt", revoked_at AS "revokedAt", scopes, lines, reach, expires_at AS "expiresAt", created_by AS "createdBy", last_used_at AS "lastUsedAt"`;

// A key in use with the same name (a partial unique index) is a conflict: nothing stored.
const create = sql<ApiKeyRow>(
  "apiKeys.create",
  `INSERT INTO api_keys (id, name, hash, prefix, created_at, scopes, lines, reach, expires_at, created_by)
   VALUES ($id, $name, $hash, $prefix, {now_ms}, $scopes, $lines, $reach, $expiresAt, $createdBy) ON CONFLICT DO NOTHING RETURNING ${ROW}`,
);
const list = sql<ApiKeyRow>("apiKeys.list", `SELECT ${ROW} FROM api_keys ORDER BY created_at ASC, id ASC`);
const activeByIdOrName = sql<ApiKeyRow>("apiKeys.activeByIdOrName", `SELECT ${ROW} FROM api_keys WHERE (id = $key OR name = $key) AND revoked_at IS NULL`);
const revoke = sql<ApiKeyRow>("apiKeys.revoke", `UPDATE api_keys SET revoked_at = {now_ms} WHERE id = $id AND revoked_at IS NULL RETURNING ${ROW}`);
const countActive = sql<{ n: number }>("apiKeys.countActive", `SELECT count(*) AS n FROM api_keys WHERE revoked_at IS NULL`);
const activeByHash = sql<ApiKeyRow>(
  "apiKeys.activeByHash",
  `SELECT ${ROW} FROM api_keys WHERE hash = $hash AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > {now_ms})`,
);
const touch = sql("apiKeys.touch", `UPDATE api_keys SET last_used_at = {now_ms} WHERE id = $id AND (last_used_at IS NULL OR last_used_at < {now_ms} - 60000)`);

export const apiKeys = declare<ApiKeyRepository>()({
  create: get(create, (key) => ({ ...key })),
  list: all(list, () => ({})),
  activeByIdOrName: get(activeByIdOrName, (key) => ({ key })),
  revoke: get(revoke, (id) => ({ id })),
  countActive: get(countActive, () => ({}), (row) => Number(row?.n ?? 0)),
  activeByHash: get(activeByHash, (hash) => ({ hash })),
  touch: run(touch, (id) => ({ id }), () => undefined),
});
