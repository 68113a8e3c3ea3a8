import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Db } from "../db/client";
import { apiKeys } from "../db/schema";
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

/** Stores a new key under `name` (its hash only) and returns the key, the only time it exists. */
export function createKey(db: Db, name: string, now = Date.now()): { key: string; info: ApiKeyInfo } {
  if (!KEY_NAME.test(name)) {
    throw new AppError("BAD_REQUEST", "name: must be 1 to 64 letters, digits, '_' or '-', starting with a letter or digit");
  }
  const key = generateKey();
  const prefix = key.slice(0, 10);
  try {
    db.insert(apiKeys)
      .values({ id: Bun.randomUUIDv7(), name, hash: hashKey(key).toString("hex"), prefix, createdAt: now })
      .run();
  } catch (err) {
    if (String(err).includes("UNIQUE")) throw new AppError("CONFLICT", `name: a key named "${name}" is already in use`);
    throw err;
  }
  return { key, info: { name, prefix, createdAt: new Date(now).toISOString(), revokedAt: null } };
}

export function listKeys(db: Db): ApiKeyInfo[] {
  return db
    .select()
    .from(apiKeys)
    .orderBy(asc(apiKeys.createdAt))
    .all()
    .map((k) => ({
      name: k.name,
      prefix: k.prefix,
      createdAt: new Date(k.createdAt).toISOString(),
      revokedAt: k.revokedAt === null ? null : new Date(k.revokedAt).toISOString(),
    }));
}

/** Revokes the key in use under `name`; it stops working at once, in every process. */
export function revokeKey(db: Db, name: string, now = Date.now()): void {
  const result = db
    .update(apiKeys)
    .set({ revokedAt: now })
    .where(and(eq(apiKeys.name, name), isNull(apiKeys.revokedAt)))
    .returning({ id: apiKeys.id })
    .all();
  if (result.length === 0) throw new AppError("NOT_FOUND", `name: no key in use is named "${name}"`);
}

export function countActiveKeys(db: Db): number {
  return db.select({ n: sql<number>`count(*)` }).from(apiKeys).where(isNull(apiKeys.revokedAt)).get()?.n ?? 0;
}

/**
 * Checks presented keys against the keys from the environment (by hash, in constant time)
 * and the stored ones (looked up by hash, so the key itself never meets a comparison).
 * Stored keys are read on every call, so a key created or revoked by another process
 * counts at once.
 */
export function createKeyVerifier(db: Db, envKeys: string[]) {
  const envHashes = envKeys.map(hashKey);
  const activeByHash = db
    .select({ id: apiKeys.id })
    .from(apiKeys)
    .where(and(eq(apiKeys.hash, sql.placeholder("hash")), isNull(apiKeys.revokedAt)))
    .prepare();
  return (key: string): string | null => {
    const hash = hashKey(key);
    let envMatch = -1;
    envHashes.forEach((h, i) => {
      if (timingSafeEqual(h, hash)) envMatch = i;
    });
    if (envMatch >= 0) return `env:${envMatch}`;
    return activeByHash.get({ hash: hash.toString("hex") })?.id ?? null;
  };
}
