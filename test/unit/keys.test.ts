import { describe, expect, test } from "bun:test";
import { countActiveKeys, createKey, createKeyVerifier, generateKey, listKeys, revokeKey } from "../../src/auth/keys";
import { AppError } from "../../src/errors";
import { memoryDbs, thrownBy } from "./helpers";

const db = memoryDbs();

function codeOf(err: unknown): string {
  expect(err).toBeInstanceOf(AppError);
  return (err as AppError).code;
}

describe("generateKey", () => {
  test("tw_ and at least 24 URL-safe characters", () => {
    for (let i = 0; i < 50; i++) expect(generateKey()).toMatch(/^tw_[A-Za-z0-9_-]{24,}$/);
  });

  test("every key is different", () => {
    const keys = new Set(Array.from({ length: 200 }, generateKey));
    expect(keys.size).toBe(200);
  });
});

describe("createKey stores only a hash", () => {
  test("the key appears nowhere in the api_keys table", () => {
    const d = db();
    const { key } = createKey(d, "ci");
    const rows = d.$client.query("SELECT * FROM api_keys").all();
    expect(rows).toHaveLength(1);
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(key);
    // Not even the secret part after the shown prefix.
    expect(dump).not.toContain(key.slice(10));
  });

  test("returns the key and its listing info", () => {
    const d = db();
    const now = Date.UTC(2026, 10, 21, 9, 30);
    const { key, info } = createKey(d, "ci", now);
    expect(key).toMatch(/^tw_[A-Za-z0-9_-]{24,}$/);
    expect(info).toEqual({ name: "ci", prefix: key.slice(0, 10), createdAt: "2026-11-21T09:30:00.000Z", revokedAt: null });
    expect(listKeys(d)).toEqual([info]);
  });

  test("a bad name is BAD_REQUEST", () => {
    const d = db();
    for (const name of ["", "has space", "-leading-dash", "x".repeat(65), "ünïcode"]) {
      expect(codeOf(thrownBy(() => createKey(d, name)))).toBe("BAD_REQUEST");
    }
    expect(countActiveKeys(d)).toBe(0);
  });
});

describe("key names are unique among keys in use", () => {
  test("a second active key with the same name is CONFLICT", () => {
    const d = db();
    createKey(d, "ci");
    const err = thrownBy(() => createKey(d, "ci"));
    expect(codeOf(err)).toBe("CONFLICT");
    expect((err as AppError).message).toContain("ci");
    expect(countActiveKeys(d)).toBe(1);
  });

  test("a revoked key's name can be reused", () => {
    const d = db();
    const old = createKey(d, "ci", Date.UTC(2026, 0, 1)).key;
    revokeKey(d, "ci", Date.UTC(2026, 0, 2));
    const fresh = createKey(d, "ci", Date.UTC(2026, 0, 3)).key;
    expect(fresh).not.toBe(old);
    expect(countActiveKeys(d)).toBe(1);
    expect(listKeys(d).map((k) => [k.name, k.revokedAt])).toEqual([
      ["ci", "2026-01-02T00:00:00.000Z"],
      ["ci", null],
    ]);
    const verify = createKeyVerifier(d, []);
    expect(verify(old)).toBeNull();
    expect(verify(fresh)).not.toBeNull();
  });
});

describe("revokeKey", () => {
  test("an unknown name is NOT_FOUND", () => {
    const d = db();
    expect(codeOf(thrownBy(() => revokeKey(d, "nobody")))).toBe("NOT_FOUND");
  });

  test("revoking twice: the second time is NOT_FOUND", () => {
    const d = db();
    createKey(d, "ci");
    revokeKey(d, "ci");
    expect(codeOf(thrownBy(() => revokeKey(d, "ci")))).toBe("NOT_FOUND");
  });

  test("records when it was revoked", () => {
    const d = db();
    createKey(d, "ci", Date.UTC(2026, 0, 1));
    revokeKey(d, "ci", Date.UTC(2026, 0, 2));
    expect(listKeys(d)[0]?.revokedAt).toBe("2026-01-02T00:00:00.000Z");
  });
});

describe("countActiveKeys", () => {
  test("counts keys in use, not revoked ones", () => {
    const d = db();
    expect(countActiveKeys(d)).toBe(0);
    createKey(d, "one");
    createKey(d, "two");
    expect(countActiveKeys(d)).toBe(2);
    revokeKey(d, "one");
    expect(countActiveKeys(d)).toBe(1);
  });
});

describe("createKeyVerifier accepts the right keys", () => {
  const ENV_A = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";
  const ENV_B = "env_key_bbbbbbbbbbbbbbbbbbbbbbbb";

  test("keys from the environment", () => {
    const verify = createKeyVerifier(db(), [ENV_A, ENV_B]);
    expect(verify(ENV_A)).not.toBeNull();
    expect(verify(ENV_B)).not.toBeNull();
    expect(verify(ENV_A)).not.toBe(verify(ENV_B));
  });

  test("stored keys, including ones created after the verifier", () => {
    const d = db();
    const before = createKey(d, "before").key;
    const verify = createKeyVerifier(d, []);
    const after = createKey(d, "after").key;
    expect(verify(before)).not.toBeNull();
    expect(verify(after)).not.toBeNull();
    expect(verify(before)).not.toBe(verify(after));
  });
});

describe("createKeyVerifier refuses the wrong keys", () => {
  test("a revoked key is refused at once by an existing verifier", () => {
    const d = db();
    const { key } = createKey(d, "ci");
    const verify = createKeyVerifier(d, []);
    expect(verify(key)).not.toBeNull();
    revokeKey(d, "ci");
    expect(verify(key)).toBeNull();
  });

  test("wrong keys are refused", () => {
    const d = db();
    const { key } = createKey(d, "ci");
    const env = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";
    const verify = createKeyVerifier(d, [env]);
    for (const wrong of ["", "tw_", key.slice(0, -1), `${key}x`, key.toUpperCase(), env.slice(0, -1), `${env} `, generateKey()]) {
      expect(verify(wrong)).toBeNull();
    }
  });

  test("the stored hash itself is not a key", () => {
    const d = db();
    createKey(d, "ci");
    const stored = d.$client.query("SELECT hash, prefix FROM api_keys").get() as { hash: string; prefix: string };
    const verify = createKeyVerifier(d, []);
    expect(verify(stored.hash)).toBeNull();
    expect(verify(stored.prefix)).toBeNull();
  });

  test("no keys at all: everything is refused", () => {
    expect(createKeyVerifier(db(), [])(generateKey())).toBeNull();
  });
});
