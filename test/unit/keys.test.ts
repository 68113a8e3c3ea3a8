import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { countActiveKeys, createKey, createKeyVerifier, generateKey, hashKey, listKeys, revokeKey } from "../../src/auth/keys";
import { AppError } from "../../src/errors";
import { dialects, manualClock, rejectionOf, storages } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await rejectionOf(promise);
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

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  /** The key repository of a fresh storage, on a clock the test moves (ms) where the dialect has one. */
  const setup = async () => {
    const clock = manualClock();
    const storage = await fresh(dialect.movableClock ? { clock: () => clock.t * 1000 } : {});
    return { storage, keys: storage.apiKeys, clock };
  };

  describe("createKey stores only a hash", () => {
    test("the key appears nowhere in the api_keys table", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const rows = await dialect.rows(storage, "SELECT * FROM api_keys");
      expect(rows).toHaveLength(1);
      const dump = JSON.stringify(rows);
      expect(dump).not.toContain(key);
      // Not even the secret part after the shown prefix.
      expect(dump).not.toContain(key.slice(10));
    });

    test("returns the key and its listing info", async () => {
      const { storage, keys, clock } = await setup();
      clock.t = Date.UTC(2026, 10, 21, 9, 30);
      const { key, info } = await createKey(storage, { name: "ci" });
      expect(key).toMatch(/^tw_[A-Za-z0-9_-]{24,}$/);
      expect(info).toEqual({
        id: expect.any(String),
        name: "ci",
        prefix: key.slice(0, 10),
        scopes: ["*"],
        lines: null,
        reach: "any",
        expires_at: null,
        created_by: null,
        created_at: expect.any(String),
        last_used_at: null,
        revoked_at: null,
      });
      if (dialect.movableClock) expect(info.created_at).toBe("2026-11-21T09:30:00.000Z");
      expect(await listKeys(keys)).toEqual([info]);
    });

    test("a bad name is BAD_REQUEST", async () => {
      const { storage, keys } = await setup();
      for (const name of ["", "has space", "-leading-dash", "x".repeat(65), "ünïcode"]) {
        expect(await codeOf(createKey(storage, { name: name }))).toBe("BAD_REQUEST");
      }
      expect(await countActiveKeys(keys)).toBe(0);
    });
  });

  describe("key names are unique among keys in use", () => {
    test("a second active key with the same name is CONFLICT", async () => {
      const { storage, keys } = await setup();
      await createKey(storage, { name: "ci" });
      const err = await rejectionOf(createKey(storage, { name: "ci" }));
      expect((err as AppError).code).toBe("CONFLICT");
      expect((err as AppError).message).toContain("ci");
      expect(await countActiveKeys(keys)).toBe(1);
    });

    test("a revoked key's name can be reused", async () => {
      const { storage, keys, clock } = await setup();
      clock.t = Date.UTC(2026, 0, 1);
      const old = (await createKey(storage, { name: "ci" })).key;
      clock.t = Date.UTC(2026, 0, 2);
      await revokeKey(storage, "ci");
      clock.t = Date.UTC(2026, 0, 3);
      const fresh = (await createKey(storage, { name: "ci" })).key;
      expect(fresh).not.toBe(old);
      expect(await countActiveKeys(keys)).toBe(1);
      const listed = (await listKeys(keys)).map((k) => [k.name, k.revoked_at === null]);
      expect(listed).toEqual([
        ["ci", false],
        ["ci", true],
      ]);
      if (dialect.movableClock) expect((await listKeys(keys))[0]?.revoked_at).toBe("2026-01-02T00:00:00.000Z");
      const verify = createKeyVerifier(keys, []);
      expect(await verify(old)).toBeNull();
      expect(await verify(fresh)).not.toBeNull();
    });
  });

  describe("revokeKey", () => {
    test("an unknown name is NOT_FOUND", async () => {
      const { storage, keys } = await setup();
      expect(await codeOf(revokeKey(storage, "nobody"))).toBe("NOT_FOUND");
    });

    test("revoking twice: the second time is NOT_FOUND", async () => {
      const { storage, keys } = await setup();
      await createKey(storage, { name: "ci" });
      await revokeKey(storage, "ci");
      expect(await codeOf(revokeKey(storage, "ci"))).toBe("NOT_FOUND");
    });
  });

  describe("countActiveKeys", () => {
    test("counts keys in use, not revoked ones", async () => {
      const { storage, keys } = await setup();
      expect(await countActiveKeys(keys)).toBe(0);
      await createKey(storage, { name: "one" });
      await createKey(storage, { name: "two" });
      expect(await countActiveKeys(keys)).toBe(2);
      await revokeKey(storage, "one");
      expect(await countActiveKeys(keys)).toBe(1);
    });
  });

  describe("createKeyVerifier accepts the right keys", () => {
    const ENV_A = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";
    const ENV_B = "env_key_bbbbbbbbbbbbbbbbbbbbbbbb";

    test("keys from the environment", async () => {
      const verify = createKeyVerifier((await setup()).keys, [ENV_A, ENV_B]);
      expect(await verify(ENV_A)).not.toBeNull();
      expect(await verify(ENV_B)).not.toBeNull();
      expect((await verify(ENV_A))?.id).not.toBe((await verify(ENV_B))?.id);
    });

    test("stored keys, including ones created after the verifier", async () => {
      const { storage, keys } = await setup();
      const before = (await createKey(storage, { name: "before" })).key;
      const verify = createKeyVerifier(keys, []);
      const after = (await createKey(storage, { name: "after" })).key;
      expect(await verify(before)).not.toBeNull();
      expect(await verify(after)).not.toBeNull();
      expect((await verify(before))?.id).not.toBe((await verify(after))?.id);
    });
  });

  describe("createKeyVerifier refuses the wrong keys", () => {
    test("a revoked key is refused at once by an existing verifier", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const verify = createKeyVerifier(keys, []);
      expect(await verify(key)).not.toBeNull();
      await revokeKey(storage, "ci");
      expect(await verify(key)).toBeNull();
    });

    test("wrong keys are refused", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const env = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";
      const verify = createKeyVerifier(keys, [env]);
      for (const wrong of ["", "tw_", key.slice(0, -1), `${key}x`, key.toUpperCase(), env.slice(0, -1), `${env} `, generateKey()]) {
        expect(await verify(wrong)).toBeNull();
      }
    });

    test("the stored hash itself is not a key", async () => {
      const { storage, keys } = await setup();
      await createKey(storage, { name: "ci" });
      const [stored] = (await dialect.rows(storage, "SELECT hash, prefix FROM api_keys")) as { hash: string; prefix: string }[];
      const verify = createKeyVerifier(keys, []);
      expect(await verify(stored!.hash)).toBeNull();
      expect(await verify(stored!.prefix)).toBeNull();
    });

    test("no keys at all: everything is refused", async () => {
      expect(await createKeyVerifier((await setup()).keys, [])(generateKey())).toBeNull();
    });
  });

  describe("createKeyVerifier.byHash: the same check from a key's hash (a console session's)", () => {
    const hex = (key: string) => hashKey(key).toString("hex");

    test("gives the same id as the key itself, for stored and environment keys", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const env = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";
      const verify = createKeyVerifier(keys, [env]);
      expect(await verify.byHash(hex(key))).toEqual((await verify(key))!);
      expect((await verify.byHash(hex(env)))?.id).toBe("env:0");
    });

    test("a revoked key's hash is refused at once", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const verify = createKeyVerifier(keys, []);
      await revokeKey(storage, "ci");
      expect(await verify.byHash(hex(key))).toBeNull();
    });

    test("unknown or malformed hashes are refused, never thrown on", async () => {
      const { storage, keys } = await setup();
      const { key } = await createKey(storage, { name: "ci" });
      const verify = createKeyVerifier(keys, ["env_key_aaaaaaaaaaaaaaaaaaaaaaaa"]);
      for (const wrong of ["", "00", hex(generateKey()), hex(key).toUpperCase(), hex(key).slice(2), `${hex(key)}00`, key]) {
        expect(await verify.byHash(wrong)).toBeNull();
      }
    });
  });
});
