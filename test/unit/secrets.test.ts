import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger } from "../../src/log";
import { createSecrets, isSealed, newSecretKey, parseSecretKey, SecretKeyError } from "../../src/secrets/seal";
import { loadSecretKey, resealStored, secretKeyFile } from "../../src/secrets/stored";
import { dialects, quietLog, storages } from "./helpers";

const key = () => parseSecretKey(newSecretKey())!;

describe("sealing", () => {
  test("a sealed value opens with its key, each seal with a fresh nonce; plain stored values read as they are", () => {
    const secrets = createSecrets(key());
    const a = secrets.seal("auth-token-1");
    const b = secrets.seal("auth-token-1");
    expect(isSealed(a)).toBe(true);
    expect(a).not.toBe(b);
    expect(a).not.toContain("auth-token-1");
    expect(secrets.open(a)).toBe("auth-token-1");
    expect(secrets.open(b)).toBe("auth-token-1");
    expect(secrets.open("whsec_plain")).toBe("whsec_plain");
  });

  test("another key, no key, or a changed byte cannot open it: SecretKeyError naming SECRET_KEY", () => {
    const sealed = createSecrets(key()).seal("token");
    const tampered = `${sealed.slice(0, -4)}${sealed.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
    for (const [secrets, value] of [[createSecrets(key()), sealed], [createSecrets(undefined), sealed], [createSecrets(key()), tampered]] as const) {
      expect(() => secrets.open(value)).toThrow(SecretKeyError);
      expect(() => secrets.open(value)).toThrow(/SECRET_KEY/);
    }
  });

  test("without a key nothing is sealed (PostgreSQL before SECRET_KEY)", () => {
    const secrets = createSecrets(undefined);
    expect(secrets.sealing).toBe(false);
    expect(secrets.seal("token")).toBe("token");
  });

  test.each([
    ["64 hex digits", "ab".repeat(32), true],
    ["base64 of 32 bytes", Buffer.alloc(32, 7).toString("base64"), true],
    ["base64url of 32 bytes", Buffer.alloc(32, 250).toString("base64url"), true],
    ["16 bytes", Buffer.alloc(16, 1).toString("base64"), false],
    ["a passphrase", "correct horse battery staple", false],
  ])("SECRET_KEY as %s: %p", (_, text, ok) => {
    expect(parseSecretKey(text)?.length === 32).toBe(ok);
  });
});

describe("the key of a SQLite deployment without SECRET_KEY", () => {
  test("generated once into secret.key beside the database, mode 0600 whatever the umask, and read back after", () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-secret-"));
    const before = process.umask(0o000);
    try {
      const config = { DATABASE_URL: join(dir, "db", "textwire.db") };
      const lines: string[] = [];
      const log = createLogger("info", {}, (l) => lines.push(l));
      const first = loadSecretKey(config, false, log)!;
      const file = secretKeyFile(config.DATABASE_URL);
      expect(file).toBe(join(dir, "db", "secret.key"));
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(lines.join("")).toContain(file);
      expect(loadSecretKey(config, false, quietLog)!.equals(first)).toBe(true);
      expect(parseSecretKey(readFileSync(file, "utf8"))!.equals(first)).toBe(true);
      // SECRET_KEY wins over the file.
      const given = newSecretKey();
      expect(loadSecretKey({ ...config, SECRET_KEY: given }, false, quietLog)!.equals(parseSecretKey(given)!)).toBe(true);
    } finally {
      process.umask(before);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("PostgreSQL without SECRET_KEY makes up none and warns naming SECRET_KEY", () => {
    const lines: string[] = [];
    expect(loadSecretKey({ DATABASE_URL: "postgres://db/x" }, true, createLogger("warn", {}, (l) => lines.push(l)))).toBeUndefined();
    expect(lines.join("")).toContain("SECRET_KEY is not set");
  });
});

for (const dialect of dialects) {
  const fresh = storages(dialect);
  describe(`stored secrets on ${dialect.name}`, () => {
    const line = (id: string, credentials: string) => ({
      id,
      name: id.slice(3),
      network: "twilio" as const,
      address: "+14155550100",
      enabled: true,
      isDefault: false,
      fallback: null,
      settings: "{}",
      credentials,
      managed: "api" as const,
    });

    test("the first pass with a key seals every plain value (line credentials, endpoint secrets) once; a later pass rewrites nothing", async () => {
      const storage = await fresh();
      await storage.lines.insert(line("ln_a", '{"auth_token":"plain"}'));
      await storage.webhooks.createEndpoint({ id: "we_1", url: "https://example.com/hook", events: null, description: null, secret: "whsec_one" });
      const secrets = createSecrets(key());
      expect(await resealStored(storage, secrets, secrets)).toBe(2);
      const [stored] = await storage.lines.credentials();
      expect(isSealed(stored!.credentials)).toBe(true);
      expect(secrets.open(stored!.credentials)).toBe('{"auth_token":"plain"}');
      expect(secrets.open((await storage.webhooks.getEndpoint("we_1"))!.secret)).toBe("whsec_one");
      expect(await resealStored(storage, secrets, secrets)).toBe(0);
    });

    test("a wrong key changes nothing; rotation opens with the old key and seals with the new", async () => {
      const storage = await fresh();
      const old = createSecrets(key());
      await storage.lines.insert(line("ln_a", old.seal('{"auth_token":"a"}')));
      await storage.lines.insert(line("ln_b", old.seal('{"auth_token":"b"}')));
      const before = await storage.lines.credentials();
      const wrong = createSecrets(key());
      await expect(resealStored(storage, wrong, wrong)).rejects.toThrow(SecretKeyError);
      expect(await storage.lines.credentials()).toEqual(before);
      const next = createSecrets(key());
      expect(await resealStored(storage, old, next)).toBe(2);
      expect((await storage.lines.credentials()).map((l) => next.open(l.credentials))).toEqual(['{"auth_token":"a"}', '{"auth_token":"b"}']);
      const rotated = (await storage.lines.credentials())[0]!.credentials;
      expect(() => old.open(rotated)).toThrow(SecretKeyError);
    });
  });
}
