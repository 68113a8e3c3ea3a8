import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { ApiKeyRepository, ApiKeyRow } from "../db/port";
import { AppError } from "../errors";
import { typeError } from "../messages/schemas";

const KEY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

export function hashKey(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

/** A new key: `tw_` and 32 random bytes, URL-safe. */
export function generateKey(): string {
  return `tw_${randomBytes(32).toString("base64url")}`;
}

/** A stored key as shown (the CLI, the console): never the key itself. */
export const apiKeyRecord = z
  .object({
    name: z.string(),
    prefix: z.string().meta({ description: "The key's first 10 characters, to recognise it.", example: "tw_Xb3kQ9z" }),
    created_at: z.string().meta({ description: "ISO 8601, UTC." }),
    revoked_at: z.string().nullable().meta({ description: "When it was revoked (ISO 8601, UTC); null while in use." }),
  })
  .meta({ id: "ApiKey" });

export type ApiKeyInfo = z.infer<typeof apiKeyRecord>;

/** A key's name as given to create or revoke; what a new one may be called is createKey's to say. */
export const keyNameInput = z.object({
  name: z.string(typeError("a string")).max(64, { error: "must be at most 64 characters" }),
});

export const keysOutput = z.object({ keys: z.array(apiKeyRecord) });
export const createdKeyOutput = z.object({
  key: z.string().meta({ description: "The new key: shown this once, never stored." }),
  info: apiKeyRecord,
});
export const revokedKeyOutput = z.object({ success: z.literal(true) });

const iso = (ms: number) => new Date(ms).toISOString();

function keyInfo(k: ApiKeyRow): ApiKeyInfo {
  return { name: k.name, prefix: k.prefix, created_at: iso(k.createdAt), revoked_at: k.revokedAt === null ? null : iso(k.revokedAt) };
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

/** Checks a key, or the hash of one kept elsewhere (a console session's): the key's id, or null. */
export interface KeyVerifier {
  (key: string): Promise<string | null>;
  /** The same check from the key's SHA-256, hex, as hashKey gives it. */
  byHash(hash: string): Promise<string | null>;
}

/**
 * Checks presented keys against the keys from the environment (by hash, in constant time)
 * and the stored ones (looked up by hash, so the key itself never meets a comparison).
 * Stored keys are read on every call, so a key created or revoked by another process
 * counts at once.
 */
export function createKeyVerifier(keys: ApiKeyRepository, envKeys: string[]): KeyVerifier {
  const envHashes = envKeys.map(hashKey);
  const verifyHash = async (hash: Buffer): Promise<string | null> => {
    let envMatch = -1;
    envHashes.forEach((h, i) => {
      if (timingSafeEqual(h, hash)) envMatch = i;
    });
    if (envMatch >= 0) return `env:${envMatch}`;
    return (await keys.activeIdByHash(hash.toString("hex"))) ?? null;
  };
  const verify = (key: string) => verifyHash(hashKey(key));
  // timingSafeEqual throws on a length other than a SHA-256's: such a hash matches nothing.
  const byHash = (hash: string) => (/^[0-9a-f]{64}$/.test(hash) ? verifyHash(Buffer.from(hash, "hex")) : Promise.resolve(null));
  return Object.assign(verify, { byHash });
}
