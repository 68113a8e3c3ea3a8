import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** What a sealed value starts with; anything else is a secret stored before sealing, read as it is. */
const SEALED = "tw1:";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyError extends Error {
  override name = "SecretKeyError";
}

/**
 * Seals and opens the secrets Textwire stores (line credentials, webhook endpoints'
 * signing secrets): AES-256-GCM under the deployment's key, a fresh nonce each time, stored
 * as `tw1:` + base64(nonce, tag, ciphertext). Without a key (PostgreSQL before SECRET_KEY
 * is set) values are stored as they are and only plain ones can be read.
 */
export interface Secrets {
  /** Whether values are sealed (a key is set). */
  readonly sealing: boolean;
  seal(plain: string): string;
  /** Throws SecretKeyError when the value was sealed under another key, or under one this process lacks. */
  open(stored: string): string;
}

export const isSealed = (stored: string) => stored.startsWith(SEALED);

/** A 32-byte key from base64 or hex text; undefined when it is neither. */
export function parseSecretKey(text: string): Buffer | undefined {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, "hex");
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(value)) {
    const bytes = Buffer.from(value.replace(/-/g, "+").replace(/_/g, "/"), "base64");
    if (bytes.length === 32) return bytes;
  }
  return undefined;
}

/** A new key as SECRET_KEY takes it (base64). */
export const newSecretKey = () => randomBytes(32).toString("base64");

export function createSecrets(key: Buffer | undefined): Secrets {
  return {
    sealing: key !== undefined,
    seal(plain) {
      if (!key) return plain;
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return SEALED + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString("base64");
    },
    open(stored) {
      if (!isSealed(stored)) return stored;
      if (!key) throw new SecretKeyError("SECRET_KEY is not set, but the stored secrets are sealed: set the SECRET_KEY they were sealed with");
      const bytes = Buffer.from(stored.slice(SEALED.length), "base64");
      try {
        const decipher = createDecipheriv("aes-256-gcm", key, bytes.subarray(0, NONCE_BYTES));
        decipher.setAuthTag(bytes.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
        return Buffer.concat([decipher.update(bytes.subarray(NONCE_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
      } catch {
        throw new SecretKeyError("SECRET_KEY cannot open the stored secrets: they were sealed with another key (textwire secrets rotate moves them to a new one)");
      }
    },
  };
}
