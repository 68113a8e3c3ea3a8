import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { ApiKeyRepository, ApiKeyRow } from "../db/port";
import { AppError } from "../errors";

const KEY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

export function hashKey(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

/** A new key: `tw_` and 32 random bytes, URL-safe. */
export function generateKey(): string {
  return `tw_${randomBytes(32).toString("base64url")}`;
}

export interface ApiKeyInfo {
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

function keyInfo(k: ApiKeyRow): ApiKeyInfo {
  return { name: k.name, prefix: k.prefix, createdAt: iso(k.createdAt), revokedAt: k.revokedAt === null ? null : iso(k.revokedAt) };
}

/** Stores a new key under `name` (its hash only) and returns the key, the only time it exists. */
export async function createKey(keys: ApiKeyRepository, name: string): Promise<{ key: string; info: ApiKeyInfo }> {
  if (!KEY_NAME.test(name)) {
    throw new AppError("BAD_REQUEST", "name: must be 1 to 64 letters, digits, '_' or '-', starting with a letter or digit");
  }
  const key = generateKey();
  const stored = await keys.create({ id: Bun.randomUUIDv7(), name, hash: hashKey(key).toString("hex"), prefix: key.slice(0, 10) });
  if (!stored) throw new AppError("CONFLICT", `name: a key named "${name}" is already in use`);
  return { key, info: keyInfo(stored) };
}

export async function listKeys(keys: ApiKeyRepository): Promise<ApiKeyInfo[]> {
  return (await keys.list()).map(keyInfo);
}

/** Revokes the key in use under `name`; it stops working at once, in every process. */
export async function revokeKey(keys: ApiKeyRepository, name: string): Promise<void> {
  if (!(await keys.revoke(name))) throw new AppError("NOT_FOUND", `name: no key in use is named "${name}"`);
}

export function countActiveKeys(keys: ApiKeyRepository): Promise<number> {
  return keys.countActive();
}

/**
 * Checks presented keys against the keys from the environment (by hash, in constant time)
 * and the stored ones (looked up by hash, so the key itself never meets a comparison).
 * Stored keys are read on every call, so a key created or revoked by another process
 * counts at once.
 */
export function createKeyVerifier(keys: ApiKeyRepository, envKeys: string[]) {
  const envHashes = envKeys.map(hashKey);
  return async (key: string): Promise<string | null> => {
    const hash = hashKey(key);
    let envMatch = -1;
    envHashes.forEach((h, i) => {
      if (timingSafeEqual(h, hash)) envMatch = i;
    });
    if (envMatch >= 0) return `env:${envMatch}`;
    return (await keys.activeIdByHash(hash.toString("hex"))) ?? null;
  };
}
