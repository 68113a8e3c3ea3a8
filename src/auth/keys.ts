import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { ApiKeyRepository, ApiKeyRow, Storage } from "../db/port";
import { AppError } from "../errors";
import { isoInstant, typeError } from "../messages/schemas";
import { ALL_SCOPES, MAX_KEY_LINES, REACHES, SCOPES } from "../vocabulary/scopes";
import { unlimited, widerRefusal, type KeyAuth, type KeyGrant } from "./policy";

const KEY_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

export function hashKey(key: string): Buffer {
  return createHash("sha256").update(key).digest();
}

/** A new key: `tw_` and 32 random bytes, URL-safe. */
export function generateKey(): string {
  return `tw_${randomBytes(32).toString("base64url")}`;
}

const iso = (ms: number) => new Date(ms).toISOString();
const scopeEnum = z.enum([ALL_SCOPES, ...SCOPES], { error: `must be ${ALL_SCOPES} or one of ${SCOPES.join(", ")}` });

/** A stored key as shown (the API, the CLI, the console): never the key itself. */
export const apiKeyRecord = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().meta({ description: "The key's first 10 characters, to recognise it.", example: "tw_Xb3kQ9z" }),
    scopes: z.array(z.string()).meta({ description: `What it may do: ${ALL_SCOPES} (every scope) or some of ${SCOPES.join(", ")} (docs/security.md).` }),
    lines: z.array(z.string()).nullable().meta({ description: "The line ids it may read and send through; null: every line." }),
    reach: z.enum(REACHES).meta({ description: "`known`: it may send only to phones that wrote first, and into chats that exist." }),
    expires_at: z.string().nullable().meta({ description: "When it stops working (ISO 8601, UTC); null: never." }),
    created_by: z.string().nullable().meta({ description: "The id of the key that created it; null when made by the CLI or at first start." }),
    created_at: z.string().meta({ description: "ISO 8601, UTC." }),
    last_used_at: z.string().nullable().meta({ description: "Its last use, to within a minute (ISO 8601, UTC); null: never used." }),
    revoked_at: z.string().nullable().meta({ description: "When it was revoked (ISO 8601, UTC); null while in use." }),
  })
  .meta({ id: "ApiKey" });

export type ApiKeyInfo = z.infer<typeof apiKeyRecord>;

/** POST /api/keys: a name, and scopes and limits (left out: the creator's). */
export const createKeyInput = z.object({
  name: z.string(typeError("a string")).max(64, { error: "must be at most 64 characters" }),
  scopes: z.array(scopeEnum, typeError("an array of scopes")).min(1, { error: "must name at least one scope" }).optional()
    .meta({ description: `Default ${ALL_SCOPES} (or the creator's own scopes when fewer).` }),
  lines: z.array(z.string(typeError("a string")).regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "must be line ids" }), typeError("an array of line ids"))
    .max(MAX_KEY_LINES, { error: `must be at most ${MAX_KEY_LINES} lines` }).nullable().optional()
    .meta({ description: "The line ids it may use; null: every line. Left out: the creator's." }),
  reach: z.enum(REACHES, { error: `must be one of ${REACHES.join(", ")}` }).optional().meta({ description: "Left out: the creator's." }),
  expires_at: isoInstant.nullable().optional().meta({ description: "When it stops working (ISO 8601); null: never. Left out: the creator's." }),
});
export type CreateKeyInput = z.infer<typeof createKeyInput>;

/** DELETE /api/keys/{id}: the key's id or name. */
export const keyIdInput = z.object({
  id: z.string(typeError("a string")).min(1, { error: "must not be empty" }).max(64, { error: "must be at most 64 characters" })
    .meta({ description: "The key's id or its name." }),
});

export const keysOutput = z.object({ success: z.literal(true), api_keys: z.array(apiKeyRecord) });
export const createdKeyOutput = z.object({
  success: z.literal(true),
  key: z.string().meta({ description: "The new key: shown this once, never stored." }),
  api_key: apiKeyRecord,
});
export const revokedKeyOutput = z.object({ success: z.literal(true), api_key: apiKeyRecord });

const words = (list: readonly string[]) => list.join(" ");
const split = (text: string) => (text === "" ? [] : text.split(" "));

export function keyInfo(k: ApiKeyRow): ApiKeyInfo {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    scopes: split(k.scopes),
    lines: k.lines === null ? null : split(k.lines),
    reach: k.reach,
    expires_at: k.expiresAt === null ? null : iso(Number(k.expiresAt)),
    created_by: k.createdBy,
    created_at: iso(k.createdAt),
    last_used_at: k.lastUsedAt === null ? null : iso(Number(k.lastUsedAt)),
    revoked_at: k.revokedAt === null ? null : iso(k.revokedAt),
  };
}

/** What a stored key may do, as the policy reads it. */
export function keyAuthOf(k: ApiKeyRow): KeyAuth {
  return {
    id: k.id,
    scopes: split(k.scopes) as KeyAuth["scopes"],
    lines: k.lines === null ? null : split(k.lines),
    reach: k.reach,
    expiresAt: k.expiresAt === null ? null : Number(k.expiresAt),
  };
}

/** What the key functions write: the key and its admin event, in one transaction. */
export type KeyStorage = Pick<Storage, "apiKeys" | "transaction">;

/**
 * Stores a new key under `name` (its hash only) and returns the key, the only time it exists.
 * Made by a key (`creator`), it holds no more than that key: limits left out are the
 * creator's, and a wider grant is 403 (src/auth/policy.ts). The CLI and the first start make
 * keys with every scope.
 */
export async function createKey(
  storage: KeyStorage,
  input: CreateKeyInput,
  creator: KeyAuth = unlimited("cli"),
): Promise<{ key: string; info: ApiKeyInfo }> {
  const { name } = input;
  if (!KEY_NAME.test(name)) {
    throw new AppError("BAD_REQUEST", "name: must be 1 to 64 letters, digits, '_' or '-', starting with a letter or digit");
  }
  const grant: KeyGrant = {
    scopes: input.scopes ?? [ALL_SCOPES],
    lines: input.lines === undefined ? creator.lines : input.lines,
    reach: input.reach ?? creator.reach,
    // µs from the input; ms stored.
    expiresAt: input.expires_at === undefined ? creator.expiresAt : input.expires_at === null ? null : Math.floor(input.expires_at / 1000),
  };
  const scopes: KeyGrant["scopes"] = grant.scopes.includes(ALL_SCOPES) ? [ALL_SCOPES] : [...new Set(grant.scopes)];
  const refusal = widerRefusal(creator, { ...grant, scopes });
  if (refusal) throw refusal;
  const key = generateKey();
  const stored = await storage.transaction(async (tx) => {
    const row = await tx.apiKeys.create({
    id: Bun.randomUUIDv7(),
    name,
    hash: hashKey(key).toString("hex"),
    prefix: key.slice(0, 10),
    scopes: words(scopes),
    lines: grant.lines === null ? null : words([...new Set(grant.lines)]),
    reach: grant.reach,
    expiresAt: grant.expiresAt,
    createdBy: creator.id === "cli" ? null : creator.id,
    });
    if (row) await tx.events.append("key.created", { data: { api_key: keyInfo(row), actor_key_id: row.createdBy } });
    return row;
  });
  if (!stored) throw new AppError("CONFLICT", `name: a key named "${name}" is already in use`);
  return { key, info: keyInfo(stored) };
}

export async function listKeys(keys: ApiKeyRepository): Promise<ApiKeyInfo[]> {
  return (await keys.list()).map(keyInfo);
}

/**
 * Revokes the key in use with this id or name; it stops working at once, in every process.
 * Through the API (`actor`), never an API_KEYS key (403) nor a key wider than the actor.
 */
export async function revokeKey(storage: KeyStorage, idOrName: string, actor?: KeyAuth): Promise<ApiKeyInfo> {
  const keys = storage.apiKeys;
  if (/^env:\d+$/.test(idOrName)) throw new AppError("FORBIDDEN", "id: a key from API_KEYS cannot be revoked through the API; remove it from API_KEYS");
  const found = await keys.activeByIdOrName(idOrName);
  if (!found) throw new AppError("NOT_FOUND", `id: no key in use has the id or name "${idOrName}"`);
  if (actor) {
    const target = keyAuthOf(found);
    const refusal = widerRefusal(actor, target);
    if (refusal) throw new AppError("FORBIDDEN", refusal.message.replace("create a key wider", "revoke a key wider"));
  }
  const revoked = await storage.transaction(async (tx) => {
    const row = await tx.apiKeys.revoke(found.id);
    if (row) await tx.events.append("key.revoked", { data: { api_key: keyInfo(row), actor_key_id: actor?.id ?? null } });
    return row;
  });
  if (!revoked) throw new AppError("NOT_FOUND", `id: no key in use has the id or name "${idOrName}"`);
  return keyInfo(revoked);
}

export function countActiveKeys(keys: ApiKeyRepository): Promise<number> {
  return keys.countActive();
}

/** Checks a key, or the hash of one kept elsewhere (a console session's): what the key may do, or null. */
export interface KeyVerifier {
  (key: string): Promise<KeyAuth | null>;
  /** The same check from the key's SHA-256, hex, as hashKey gives it. */
  byHash(hash: string): Promise<KeyAuth | null>;
}

/** How often one process writes a key's last_used_at ("within a minute"). */
const TOUCH_EVERY_MS = 60_000;

/**
 * Checks presented keys against the keys from the environment (by hash, in constant time)
 * and the stored ones (looked up by hash, so the key itself never meets a comparison; an
 * expired or revoked one is not found). Stored keys are read on every call, so a key
 * created or revoked by another process counts at once. A stored key's last_used_at is
 * written at most once a minute per process, after the answer.
 */
export function createKeyVerifier(keys: ApiKeyRepository, envKeys: string[], onTouchError: (err: unknown) => void = () => {}): KeyVerifier {
  const envHashes = envKeys.map(hashKey);
  const touched = new Map<string, number>();
  const verifyHash = async (hash: Buffer): Promise<KeyAuth | null> => {
    let envMatch = -1;
    envHashes.forEach((h, i) => {
      if (timingSafeEqual(h, hash)) envMatch = i;
    });
    if (envMatch >= 0) return unlimited(`env:${envMatch}`);
    const row = await keys.activeByHash(hash.toString("hex"));
    if (!row) return null;
    const now = Date.now();
    if ((touched.get(row.id) ?? 0) < now - TOUCH_EVERY_MS) {
      touched.set(row.id, now);
      keys.touch(row.id).catch(onTouchError);
    }
    return keyAuthOf(row);
  };
  const verify = (key: string) => verifyHash(hashKey(key));
  // timingSafeEqual throws on a length other than a SHA-256's: such a hash matches nothing.
  const byHash = (hash: string) => (/^[0-9a-f]{64}$/.test(hash) ? verifyHash(Buffer.from(hash, "hex")) : Promise.resolve(null));
  return Object.assign(verify, { byHash });
}
