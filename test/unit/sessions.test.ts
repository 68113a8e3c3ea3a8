// Console sessions (src/auth/sessions.ts) on every dialect: the repository keeps only hashes
// and times from the database's clock; the service signs in with a key, authenticates by
// the cookie token while the session lives and its key verifies, and signs out.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createKey, createKeyVerifier, hashKey, revokeKey } from "../../src/auth/keys";
import { csrfMatches, SESSION_TTL_MS, sessionAuth, signIn, signOut } from "../../src/auth/sessions";
import { AppError } from "../../src/errors";
import { dialects, manualClock, rejectionOf, storages } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const HOUR = 60 * 60_000;
const hex = (text: string) => hashKey(text).toString("hex");
const ENV_KEY = "env_key_aaaaaaaaaaaaaaaaaaaaaaaa";

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  const setup = async () => {
    const clock = manualClock();
    const storage = await fresh(dialect.movableClock ? { clock: () => clock.t * 1000 } : {});
    const app = { storage, verifyKey: createKeyVerifier(storage.apiKeys, [ENV_KEY]) };
    return { storage, app, clock };
  };

  describe("the sessions repository", () => {
    test("create: created now, expiring ttl later; getActive finds it while it lives", async () => {
      const { storage, clock } = await setup();
      const row = await storage.sessions.create({ idHash: hex("t1"), keyHash: hex("k"), csrfToken: "c1" }, 12 * HOUR);
      expect(row).toMatchObject({ idHash: hex("t1"), keyHash: hex("k"), csrfToken: "c1" });
      expect(row.expiresAt - row.createdAt).toBe(12 * HOUR);
      if (dialect.movableClock) expect(row.createdAt).toBe(clock.t);
      else expect(Math.abs(row.createdAt - Date.now())).toBeLessThan(60_000);
      expect(await storage.sessions.getActive(hex("t1"))).toEqual(row);
      expect(await storage.sessions.getActive(hex("t2"))).toBeUndefined();
    });

    test("an expired session is not active, and the retention purge deletes only expired ones", async () => {
      const { storage, clock } = await setup();
      await storage.sessions.create({ idHash: hex("short"), keyHash: hex("k"), csrfToken: "c" }, 1000);
      await storage.sessions.create({ idHash: hex("long"), keyHash: hex("k"), csrfToken: "c" }, 12 * HOUR);
      if (dialect.movableClock) clock.t += 1000;
      else await dialect.rows(storage, `UPDATE console_sessions SET expires_at = created_at - 1 WHERE id_hash = '${hex("short")}'`);
      expect(await storage.sessions.getActive(hex("short"))).toBeUndefined();
      expect(await storage.sessions.getActive(hex("long"))).toBeDefined();
      expect(await storage.retention.purge("console_sessions", 0, 10)).toBe(1);
      expect(await storage.retention.purge("console_sessions", 0, 10)).toBe(0);
      expect((await dialect.rows(storage, "SELECT id_hash FROM console_sessions")).map((r) => r.id_hash)).toEqual([hex("long")]);
    });

    test("delete: true once, false after", async () => {
      const { storage } = await setup();
      await storage.sessions.create({ idHash: hex("t"), keyHash: hex("k"), csrfToken: "c" }, HOUR);
      expect(await storage.sessions.delete(hex("t"))).toBe(true);
      expect(await storage.sessions.delete(hex("t"))).toBe(false);
      expect(await storage.sessions.getActive(hex("t"))).toBeUndefined();
    });
  });

  describe("signIn", () => {
    test("a valid key: a 43-character token and CSRF token, expiry 12 h on; only hashes stored", async () => {
      const { storage, app, clock } = await setup();
      const { key } = await createKey(storage, { name: "operator" });
      const session = await signIn(app, key);
      expect(session.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(session.csrfToken).not.toBe(session.token);
      if (dialect.movableClock) expect(session.expiresAt).toBe(new Date(clock.t + SESSION_TTL_MS).toISOString());
      const rows = await dialect.rows(storage, "SELECT * FROM console_sessions");
      expect(rows).toHaveLength(1);
      const dump = JSON.stringify(rows);
      expect(dump).not.toContain(session.token);
      expect(dump).not.toContain(key);
      expect(rows[0]).toMatchObject({ id_hash: hex(session.token), key_hash: hex(key) });
    });

    test("a key from the environment signs in too", async () => {
      const { app } = await setup();
      const session = await signIn(app, ENV_KEY);
      expect(await sessionAuth(app, session.token)).toMatchObject({ key: { id: "env:0", scopes: ["*"] }, csrfToken: session.csrfToken });
    });

    test("a wrong key: 401 naming key, nothing stored", async () => {
      const { storage, app } = await setup();
      const { key } = await createKey(storage, { name: "operator" });
      for (const wrong of ["", `${key}x`, key.slice(0, -1), hex(key)]) {
        const err = await rejectionOf(signIn(app, wrong));
        expect(err).toBeInstanceOf(AppError);
        expect(err).toMatchObject({ code: "UNAUTHORIZED", message: "key: not a valid API key" });
      }
      expect(await dialect.rows(storage, "SELECT * FROM console_sessions")).toEqual([]);
    });

    test("every sign-in is a session of its own", async () => {
      const { app } = await setup();
      const a = await signIn(app, ENV_KEY);
      const b = await signIn(app, ENV_KEY);
      expect(a.token).not.toBe(b.token);
      expect(a.csrfToken).not.toBe(b.csrfToken);
    });
  });

  describe("sessionAuth and signOut", () => {
    test("the token authenticates as its key, with its CSRF token and expiry", async () => {
      const { storage, app } = await setup();
      const { key } = await createKey(storage, { name: "operator" });
      const verified = await app.verifyKey(key);
      const session = await signIn(app, key);
      expect(await sessionAuth(app, session.token)).toEqual({ key: verified!, csrfToken: session.csrfToken, expiresAt: session.expiresAt });
    });

    test("unknown, malformed or hashed tokens: null", async () => {
      const { app } = await setup();
      const session = await signIn(app, ENV_KEY);
      for (const token of ["", "x", `${session.token}x`, session.token.slice(1), hex(session.token), "a".repeat(43)]) {
        expect(await sessionAuth(app, token)).toBeNull();
      }
    });

    test("revoking the key ends its sessions at once", async () => {
      const { storage, app } = await setup();
      const { key } = await createKey(storage, { name: "operator" });
      const session = await signIn(app, key);
      await revokeKey(storage, "operator");
      expect(await sessionAuth(app, session.token)).toBeNull();
    });

    test("an expired session: null", async () => {
      const { storage, app, clock } = await setup();
      const session = await signIn(app, ENV_KEY);
      if (dialect.movableClock) clock.t += SESSION_TTL_MS;
      else await dialect.rows(storage, "UPDATE console_sessions SET expires_at = created_at - 1");
      expect(await sessionAuth(app, session.token)).toBeNull();
    });

    test("signOut deletes the session; other sessions live on; a malformed token is ignored", async () => {
      const { app } = await setup();
      const a = await signIn(app, ENV_KEY);
      const b = await signIn(app, ENV_KEY);
      await signOut(app, a.token);
      await signOut(app, "not a token");
      expect(await sessionAuth(app, a.token)).toBeNull();
      expect(await sessionAuth(app, b.token)).not.toBeNull();
    });

    test("csrfMatches: the session's token only", async () => {
      const { app } = await setup();
      const live = (await sessionAuth(app, (await signIn(app, ENV_KEY)).token))!;
      expect(csrfMatches(live, live.csrfToken)).toBe(true);
      for (const wrong of ["", live.csrfToken.slice(1), `${live.csrfToken}x`, live.csrfToken.toLowerCase() === live.csrfToken ? "x" : live.csrfToken.toLowerCase()]) {
        expect(csrfMatches(live, wrong)).toBe(false);
      }
    });
  });
});
