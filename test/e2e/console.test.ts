// The operator console's server side (docs/api.md "Console sessions"), over real HTTP with
// the real server: sign-in exchanges a key for an HttpOnly cookie (exact flags, Secure only
// over HTTPS), a wrong key is a counted 401; the session authenticates tRPC and media as its
// key, with Origin and X-CSRF-Token checked on every state-changing call; sign-out, a
// revoked key and expiry end it on the server; /console serves the app built in memory.
// The first server's failed authentications (about 17) stay below the 20 a minute an
// address may fail (harness.ts); the throttle itself is tested behind a trusted proxy.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createHash, randomBytes } from "node:crypto";
import { call, expectError, newPhone } from "./api";
import { KEY_PATTERN, runCli, startServer, waitFor, type Server } from "./harness";

setDefaultTimeout(60_000);

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const COOKIE = /^textwire_session=([A-Za-z0-9_-]{43}); Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/;
const CSP =
  "default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

interface Session {
  token: string;
  csrf: string;
  expiresAt: string;
}

/** POST /console/session without an Authorization header. */
function postSignIn(server: Server, body: unknown, headers: Record<string, string> = {}) {
  return call<{ csrf_token: string; expires_at: string }>(server, "POST", "/console/session", { body, key: null, headers });
}

async function signIn(server: Server, key = server.apiKey): Promise<Session> {
  const reply = await postSignIn(server, { key }, { origin: server.url });
  expect(reply.status).toBe(200);
  const token = COOKIE.exec(reply.headers.get("set-cookie") ?? "")?.[1];
  if (!token) throw new Error(`no session cookie in: ${reply.headers.get("set-cookie")}`);
  return { token, csrf: reply.body.csrf_token, expiresAt: reply.body.expires_at };
}

/** A call by session cookie: no Authorization header; Origin and X-CSRF-Token as given. */
function bySession(server: Server, method: string, path: string, session: Session | null, opts: { body?: unknown; origin?: string | null; csrf?: string | null } = {}) {
  const headers: Record<string, string> = {};
  if (session) headers.cookie = `textwire_session=${session.token}`;
  const origin = opts.origin === undefined ? server.url : opts.origin;
  if (origin !== null) headers.origin = origin;
  const csrf = opts.csrf === undefined ? session?.csrf : opts.csrf;
  if (csrf) headers["x-csrf-token"] = csrf;
  return call<any>(server, method, path, { key: null, headers, ...(opts.body !== undefined ? { body: opts.body } : {}) });
}

const historyPath = (phone: string) => `/trpc/messages.history?input=${encodeURIComponent(JSON.stringify({ phone }))}`;

/** How many messages the contact has, asked with the server's key. */
async function total(server: Server, phone: string): Promise<number> {
  return (await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`)).body.total;
}

/** A tRPC error's status and message. */
function trpcError(reply: { status: number; body: any }, status: number): string {
  expect(reply.status).toBe(status);
  expect(reply.body.error.data.httpStatus).toBe(status);
  return reply.body.error.message as string;
}

describe("the console on one server", () => {
  let server: Server;
  let files: ReturnType<typeof Bun.serve>;
  const photo = new Uint8Array(randomBytes(2000));
  photo.set([0xff, 0xd8, 0xff, 0xe0]);

  beforeAll(async () => {
    files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(photo, { headers: { "Content-Type": "image/jpeg" } }) });
    server = await startServer({ env: { ALLOW_PRIVATE_URLS: "true" } });
  });
  afterAll(async () => {
    await server?.stop();
    await server?.db.cleanup();
    files?.stop(true);
  });

  describe("sign-in", () => {
    test("the right key: 200 with the CSRF token and expiry, and an HttpOnly, SameSite=Strict cookie of 12 h (no Secure over http)", async () => {
      const reply = await postSignIn(server, { key: server.apiKey }, { origin: server.url });
      expect(reply.status).toBe(200);
      expect(Object.keys(reply.body).sort()).toEqual(["csrf_token", "expires_at"]);
      expect(reply.body.csrf_token).toMatch(TOKEN);
      const hours = (Date.parse(reply.body.expires_at) - Date.now()) / 3_600_000;
      expect(hours).toBeGreaterThan(11.9);
      expect(hours).toBeLessThanOrEqual(12.01);
      expect(reply.headers.get("set-cookie") ?? "").toMatch(COOKIE);
      expect(reply.headers.get("cache-control")).toBe("no-store");
      expect(reply.headers.get("content-security-policy")).toBe(CSP);
    });

    test("without an Origin header (a non-browser client) sign-in works too", async () => {
      expect((await postSignIn(server, { key: server.apiKey })).status).toBe(200);
    });

    test("the database holds neither the cookie token nor the key, only their hashes", async () => {
      const session = await signIn(server);
      const contents = await server.db.contents();
      expect(contents).not.toContain(session.token);
      expect(contents).not.toContain(server.apiKey);
      expect(contents).toContain(sha256(session.token));
    });

    test("a wrong key: 401 in the error envelope naming key, no cookie", async () => {
      const reply = await postSignIn(server, { key: `${server.apiKey}x` }, { origin: server.url });
      const body = expectError(reply, 401, "UNAUTHORIZED", [server.apiKey]);
      expect(body.error.message).toBe("key: not a valid API key");
      expect(reply.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/);
      expect(reply.headers.get("set-cookie")).toBeNull();
    });

    test("bad input names the field: 400, never 500", async () => {
      for (const body of [{}, { key: 5 }, { key: "" }, { key: "x".repeat(2000) }]) {
        expect(expectError(await postSignIn(server, body), 400, "BAD_REQUEST").error.message).toStartWith("key: ");
      }
      expect(expectError(await postSignIn(server, ["key"]), 400, "BAD_REQUEST").error.message).toStartWith("body: ");
      const malformed = await call(server, "POST", "/console/session", { key: null, raw: "{", headers: { "content-type": "application/json" } });
      expect(expectError(malformed, 400, "BAD_REQUEST").error.message).toStartWith("body: ");
      const text = await call(server, "POST", "/console/session", { key: null, raw: "key", headers: { "content-type": "text/plain" } });
      expectError(text, 415, "UNSUPPORTED_MEDIA_TYPE");
    });

    test("from a foreign Origin: 403 naming origin, no cookie", async () => {
      const reply = await postSignIn(server, { key: server.apiKey }, { origin: "https://evil.example" });
      expect(expectError(reply, 403, "FORBIDDEN").error.message).toStartWith("origin: ");
      expect(reply.headers.get("set-cookie")).toBeNull();
    });

    test("GET /console/session: the live session's token and expiry; 401 without a cookie or with an unknown one", async () => {
      const session = await signIn(server);
      const live = await bySession(server, "GET", "/console/session", session, { origin: null, csrf: null });
      expect(live.status).toBe(200);
      expect(live.body).toEqual({ csrf_token: session.csrf, expires_at: session.expiresAt });
      expect(live.headers.get("cache-control")).toBe("no-store");
      const none = await bySession(server, "GET", "/console/session", null);
      expectError(none, 401, "UNAUTHORIZED");
      expect(none.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/);
      expectError(await bySession(server, "GET", "/console/session", { ...session, token: randomBytes(32).toString("base64url") }), 401, "UNAUTHORIZED");
    });
  });

  describe("the session on tRPC", () => {
    let session: Session;
    beforeAll(async () => {
      session = await signIn(server);
    });

    test("a query by cookie alone", async () => {
      const reply = await bySession(server, "GET", historyPath(newPhone()), session, { origin: null, csrf: null });
      expect(reply.status).toBe(200);
      expect(reply.body.result.data).toMatchObject({ success: true, total: 0 });
    });

    test("a mutation with Origin and X-CSRF-Token sends", async () => {
      const phone = newPhone();
      const reply = await bySession(server, "POST", "/trpc/messages.send", session, { body: { phone, message: "from the console" } });
      expect(reply.status).toBe(200);
      expect(reply.body.result.data).toMatchObject({ success: true, status: "delivered" });
      expect(await total(server, phone)).toBe(1);
    });

    test("a mutation without the CSRF header, with a wrong one, without Origin or from another origin: 403, nothing sent", async () => {
      const phone = newPhone();
      const body = { phone, message: "forged" };
      expect(trpcError(await bySession(server, "POST", "/trpc/messages.send", session, { body, csrf: null }), 403)).toStartWith("x-csrf-token: ");
      const wrong = randomBytes(32).toString("base64url");
      expect(trpcError(await bySession(server, "POST", "/trpc/messages.send", session, { body, csrf: wrong }), 403)).toStartWith("x-csrf-token: ");
      expect(trpcError(await bySession(server, "POST", "/trpc/messages.send", session, { body, origin: null }), 403)).toStartWith("origin: ");
      expect(trpcError(await bySession(server, "POST", "/trpc/messages.send", session, { body, origin: "https://evil.example" }), 403)).toStartWith("origin: ");
      expect(trpcError(await bySession(server, "POST", "/trpc/messages.send", session, { body, origin: "null" }), 403)).toStartWith("origin: ");
      expect(await total(server, phone)).toBe(0);
    });

    test("a mutation over GET (where no CSRF token is asked for) is refused by tRPC: nothing sent", async () => {
      const phone = newPhone();
      const input = encodeURIComponent(JSON.stringify({ phone, message: "by GET" }));
      const reply = await bySession(server, "GET", `/trpc/messages.send?input=${input}`, session, { origin: null, csrf: null });
      expect(reply.status).toBe(405);
      expect(await total(server, phone)).toBe(0);
    });

    test("an empty cookie (a cleared one) counts as none: 401 asking for the key", async () => {
      const reply = await call<any>(server, "GET", historyPath(newPhone()), { key: null, headers: { cookie: "textwire_session=" } });
      expect(trpcError(reply, 401)).toStartWith("authorization: ");
      expectError(await call(server, "GET", "/console/session", { key: null, headers: { cookie: "other=1; textwire_session=" } }), 401, "UNAUTHORIZED");
    });

    test("cross-site without the cookie (SameSite=Strict keeps it home): 401", async () => {
      const phone = newPhone();
      const reply = await bySession(server, "POST", "/trpc/messages.send", null, { body: { phone, message: "x" }, origin: "https://evil.example", csrf: session.csrf });
      expect(trpcError(reply, 401)).toStartWith("authorization: ");
      expect(trpcError(await bySession(server, "GET", historyPath(phone), null, { origin: "https://evil.example" }), 401)).toStartWith("authorization: ");
      expect(await total(server, phone)).toBe(0);
    });

    test("a Bearer header decides over the cookie: a wrong key with a live cookie is 401", async () => {
      const reply = await call<any>(server, "GET", historyPath(newPhone()), { key: `${server.apiKey}x`, headers: { cookie: `textwire_session=${session.token}` } });
      expect(trpcError(reply, 401)).toBe("authorization: invalid API key");
    });

    test("the REST routes take no session: 401", async () => {
      expectError(await bySession(server, "GET", `/api/messages/${encodeURIComponent(newPhone())}`, session), 401, "UNAUTHORIZED");
      expectError(await bySession(server, "POST", "/api/send", session, { body: { phone: newPhone(), message: "x" } }), 401, "UNAUTHORIZED");
    });

    test("GET /api/media/:id by cookie (an <img> of the console); 401 without it", async () => {
      const phone = newPhone();
      const sent = await call(server, "POST", "/api/send", { body: { phone, media: [{ url: `http://127.0.0.1:${files.port}/photo.jpg` }] } });
      expect(sent.status).toBe(200);
      const thread = await bySession(server, "GET", historyPath(phone), session, { origin: null, csrf: null });
      const url = thread.body.result.data.messages[0].media[0].url as string;
      const image = await server.fetch(url, { headers: { cookie: `textwire_session=${session.token}` } }, null);
      expect(image.status).toBe(200);
      expect(new Uint8Array(await image.arrayBuffer())).toEqual(photo);
      expectError(await call(server, "GET", url, { key: null }), 401, "UNAUTHORIZED");
    });
  });

  describe("ending a session", () => {
    test("sign-out needs the CSRF header (403, the session lives on), then ends the session on the server: the old cookie is 401", async () => {
      const session = await signIn(server);
      const refused = await bySession(server, "DELETE", "/console/session", session, { csrf: null });
      expect(expectError(refused, 403, "FORBIDDEN").error.message).toStartWith("x-csrf-token: ");
      expect(expectError(await bySession(server, "DELETE", "/console/session", session, { origin: "https://evil.example" }), 403, "FORBIDDEN").error.message).toStartWith("origin: ");
      expect((await bySession(server, "GET", "/console/session", session)).status).toBe(200);

      const out = await bySession(server, "DELETE", "/console/session", session);
      expect(out.status).toBe(204);
      expect(out.headers.get("set-cookie")).toBe("textwire_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
      expectError(await bySession(server, "GET", "/console/session", session), 401, "UNAUTHORIZED");
      expect(trpcError(await bySession(server, "GET", historyPath(newPhone()), session), 401)).toStartWith("session: ");
      expect(await server.db.query("SELECT id_hash FROM console_sessions WHERE id_hash = ?", sha256(session.token))).toEqual([]);
    });

    test("revoking the key ends its sessions at once", async () => {
      const env = { DATABASE_URL: server.db.url };
      const created = await runCli(["keys", "create", "--name", "operator"], env);
      expect(created.code).toBe(0);
      const key = created.stdout.match(KEY_PATTERN)![0];
      const session = await signIn(server, key);
      expect((await bySession(server, "GET", historyPath(newPhone()), session)).status).toBe(200);
      expect((await runCli(["keys", "revoke", "operator"], env)).code).toBe(0);
      expect(trpcError(await bySession(server, "GET", historyPath(newPhone()), session), 401)).toStartWith("session: ");
      expectError(await bySession(server, "GET", "/console/session", session), 401, "UNAUTHORIZED");
      expectError(await postSignIn(server, { key }), 401, "UNAUTHORIZED");
    });

    test("an expired session (expires_at in the past, by the database) is 401", async () => {
      const session = await signIn(server);
      expect(await server.db.run("UPDATE console_sessions SET expires_at = created_at - 1 WHERE id_hash = ?", sha256(session.token))).toBe(1);
      expectError(await bySession(server, "GET", "/console/session", session), 401, "UNAUTHORIZED");
      expect(trpcError(await bySession(server, "GET", historyPath(newPhone()), session), 401)).toStartWith("session: ");
    });
  });

  describe("the app", () => {
    const expectConsoleHeaders = (headers: Headers) => {
      expect(headers.get("content-security-policy")).toBe(CSP);
      expect(headers.get("x-content-type-options")).toBe("nosniff");
      expect(headers.get("referrer-policy")).toBe("same-origin");
      expect(headers.get("x-frame-options")).toBe("DENY");
    };

    test("/console, /console/ and client-side routes give the built index.html, not cached, with the console's headers", async () => {
      for (const path of ["/console", "/console/", "/console/conversations", "/console/conversations/+14155550123", "/console/keys"]) {
        const reply = await call(server, "GET", path, { key: null });
        expect(reply.status).toBe(200);
        expect(reply.headers.get("content-type")).toStartWith("text/html");
        expect(reply.headers.get("cache-control")).toBe("no-store");
        expectConsoleHeaders(reply.headers);
        expect(reply.text).toContain('<div id="root">');
        // Built: the source's relative module is replaced by a hashed asset.
        expect(reply.text).not.toContain("main.tsx");
        expect(reply.text).toMatch(/<script type="module"[^>]* src="\/console\/assets\/[^"]+\.js"/);
      }
    });

    test("its JS and CSS are served under /console/assets/, cached for good; an unknown asset is a 404", async () => {
      const html = (await call(server, "GET", "/console", { key: null })).text;
      const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
      expect(assets.some((a) => a.endsWith(".js"))).toBe(true);
      expect(assets.some((a) => a.endsWith(".css"))).toBe(true);
      for (const asset of assets) {
        const res = await server.fetch(asset, {}, null);
        expect(res.status).toBe(200);
        expect(res.headers.get("content-type")).toMatch(asset.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
        expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
        expectConsoleHeaders(res.headers);
        expect((await res.text()).length).toBeGreaterThan(100);
      }
      const missing = await call(server, "GET", "/console/assets/chunk-nothere.js", { key: null });
      expectError(missing, 404, "NOT_FOUND");
      expectConsoleHeaders(missing.headers);
    });

    test("HEAD is served, other methods are 405 with Allow", async () => {
      const head = await server.fetch("/console/workflows", { method: "HEAD" }, null);
      expect(head.status).toBe(200);
      expect(await head.text()).toBe("");
      const post = await call(server, "POST", "/console/conversations", { key: null, body: {} });
      expectError(post, 405, "METHOD_NOT_SUPPORTED");
      expect(post.headers.get("allow")).toBe("GET, HEAD");
    });

    test("the build ran once: one log line", async () => {
      const built = () => server.stdout.split("\n").filter((l) => l.includes('"built the console"'));
      await waitFor("the build's log line", 5_000, () => built().length > 0, () => server.stdout);
      expect(built()).toHaveLength(1);
    });
  });
});

describe("behind a trusted proxy, with a per-key rate limit", () => {
  let server: Server;
  beforeAll(async () => {
    server = await startServer({ env: { TRUSTED_PROXIES: "127.0.0.1", RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "1000" } });
  });
  afterAll(async () => {
    await server?.stop();
    await server?.db.cleanup();
  });

  test("X-Forwarded-Proto: https from the proxy makes the cookie Secure, and the https origin is the server's own", async () => {
    const host = new URL(server.url).host;
    const reply = await postSignIn(server, { key: server.apiKey }, { "x-forwarded-proto": "https", origin: `https://${host}` });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("set-cookie")).toMatch(/^textwire_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure$/);
    const plain = await postSignIn(server, { key: server.apiKey });
    expect(plain.headers.get("set-cookie") ?? "").not.toContain("Secure");
  });

  test("a session takes from its key's rate-limit bucket, as the key itself does", async () => {
    const session = await signIn(server);
    const remaining = async (reply: Promise<{ status: number; headers: Headers }>) => {
      const r = await reply;
      expect(r.status).toBe(200);
      return Number(r.headers.get("ratelimit-remaining"));
    };
    const first = await remaining(call(server, "GET", historyPath(newPhone())));
    const second = await remaining(bySession(server, "GET", historyPath(newPhone()), session));
    const third = await remaining(call(server, "GET", historyPath(newPhone())));
    expect([second, third]).toEqual([first - 1, first - 2]);
  });

  test("failed sign-ins are counted per client address: the 21st in a minute is 429; the right key still gets in", async () => {
    const from = { "x-forwarded-for": "203.0.113.7" };
    for (let i = 0; i < 20; i++) expectError(await postSignIn(server, { key: `tw_wrong_${"x".repeat(30)}` }, from), 401, "UNAUTHORIZED");
    const throttled = await postSignIn(server, { key: `tw_wrong_${"x".repeat(30)}` }, from);
    expectError(throttled, 429, "TOO_MANY_REQUESTS");
    expect(throttled.headers.get("retry-after") ?? "").toMatch(/^\d+$/);
    expect((await postSignIn(server, { key: server.apiKey }, from)).status).toBe(200);
    // Another address is not affected.
    expectError(await postSignIn(server, { key: "tw_wrong" }, { "x-forwarded-for": "203.0.113.8" }), 401, "UNAUTHORIZED");
  });
});
