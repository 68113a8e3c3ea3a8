// Authentication (docs/api.md): every message route needs
// `Authorization: Bearer <key>` (scheme case-insensitive), anything else is 401 with
// WWW-Authenticate: Bearer; failed attempts are throttled per address; keys never
// appear in answers or logs.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectError, newPhone } from "./api";
import { lines, newApiKey, spawnServer, startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const phone = "+14155550123";
const routes: [string, string, unknown][] = [
  ["POST", "/api/send", { phone, message: "hi" }],
  ["GET", `/api/messages/${encodeURIComponent(phone)}`, undefined],
  ["GET", "/api/messages/poll", undefined],
  ["POST", "/webhooks/loopback", { phone, message: "hi" }],
];

describe("who gets in", () => {
  let server: Server;
  const second = newApiKey();
  beforeAll(async () => {
    const key = newApiKey();
    server = await startServer({ apiKey: key, env: { API_KEYS: `${key},${second}` } });
  }, 60_000);
  afterAll(() => server?.kill());

  for (const [method, path, body] of routes) {
    test(`${method} ${path.replace(/%2B\d+/, ":phone")} without a key: 401, WWW-Authenticate: Bearer, nothing stored`, async () => {
      const reply = await call(server, method, path, { key: null, ...(body ? { body } : {}) });
      expectError(reply, 401, "UNAUTHORIZED");
      expect(reply.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i);
    });
  }

  test("nothing was stored by the refused requests", async () => {
    const reply = await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`);
    expect(reply.status).toBe(200);
    expect(reply.body.total).toBe(0);
  });

  for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
    test(`scheme "${scheme}" is accepted`, async () => {
      const reply = await call(server, "GET", "/api/messages/poll", { headers: { authorization: `${scheme} ${server.apiKey}` } });
      expect(reply.status).toBe(200);
    });
  }

  test("every key in API_KEYS works", async () => {
    for (const key of [server.apiKey, second]) {
      const reply = await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "from either key" }, key });
      expect(reply.status).toBe(200);
    }
  });

  const wrong: [string, (key: string) => string][] = [
    ["an unknown key", () => `Bearer ${newApiKey()}`],
    ["the key with one more character", (k) => `Bearer ${k}x`],
    ["the key without its last character", (k) => `Bearer ${k.slice(0, -1)}`],
    ["the key in another case", (k) => `Bearer ${k.toUpperCase() === k ? k.toLowerCase() : k.toUpperCase()}`],
    ["the key without a scheme", (k) => k],
    ["the Basic scheme", (k) => `Basic ${btoa(`${k}:`)}`],
    ["the Token scheme", (k) => `Token ${k}`],
    ["the scheme alone", () => "Bearer"],
    ["the scheme and a space", () => "Bearer "],
  ];
  for (const [why, header] of wrong) {
    test(`401 for ${why}, and the answer never echoes a key`, async () => {
      const value = header(server.apiKey);
      const reply = await call(server, "GET", "/api/messages/poll", { headers: { authorization: value } });
      expectError(reply, 401, "UNAUTHORIZED", [server.apiKey, second, value.replace(/^\S+\s/, "")].filter((s) => s.length >= 20));
      expect(reply.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i);
    });
  }

  test("the 401 says what was wrong with the header: none, another scheme, no key after Bearer, a wrong key", async () => {
    const said: [string | null, string][] = [
      [null, "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'"],
      [`Basic ${btoa(`${server.apiKey}:`)}`, "authorization: the scheme must be Bearer, not Basic: 'Authorization: Bearer <API_KEY>'"],
      [`token ${server.apiKey}`, "authorization: the scheme must be Bearer, not token: 'Authorization: Bearer <API_KEY>'"],
      ["Bearer", "authorization: expected one API key after Bearer: 'Authorization: Bearer <API_KEY>'"],
      [`Bearer ${newApiKey()}`, "authorization: invalid API key"],
    ];
    for (const [header, message] of said) {
      const reply = await call(server, "GET", "/api/messages/poll", header === null ? { key: null } : { headers: { authorization: header } });
      expect([header, expectError(reply, 401, "UNAUTHORIZED").error.message]).toEqual([header, message]);
    }
  });

  test("a key in the query string is not accepted", async () => {
    const reply = await call(server, "GET", `/api/messages/poll?api_key=${server.apiKey}&key=${server.apiKey}`, { key: null });
    expectError(reply, 401, "UNAUTHORIZED");
  });

  test("GET /health, /openapi.json and /docs need no key", async () => {
    for (const path of ["/health", "/openapi.json", "/docs"]) {
      const res = await server.fetch(path, {}, null);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    }
  });

  test("the server never writes a configured key to its output", () => {
    for (const key of [server.apiKey, second]) {
      expect(server.stdout).not.toContain(key);
      expect(server.stderr).not.toContain(key);
    }
  });
});

describe("failed authentication is throttled per client address (20 a minute, then 429)", () => {
  let server: Server;
  beforeAll(async () => {
    // Rate limiting per key is off here (RATE_LIMIT_PER_MINUTE=0); this throttle is separate.
    server = await startServer();
  }, 60_000);
  afterAll(() => server?.kill());

  test("20 bad attempts are 401, every one after them is 429 with Retry-After", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const reply = await call(server, "GET", "/api/messages/poll", { key: newApiKey() });
      statuses.push(reply.status);
      if (i >= 20) {
        expectError(reply, 429, "TOO_MANY_REQUESTS", [server.apiKey]);
        const retryAfter = reply.headers.get("retry-after") ?? "";
        expect(retryAfter).toMatch(/^\d+$/);
        expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
      }
    }
    expect(statuses).toEqual([...Array<number>(20).fill(401), ...Array<number>(5).fill(429)]);
  });

  test("a valid key from that address is never refused by it; failures still are", async () => {
    for (let i = 0; i < 5; i++) {
      expect((await call(server, "GET", "/api/messages/poll")).status).toBe(200);
      expect((await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "still in" } })).status).toBe(200);
    }
    expectError(await call(server, "GET", "/api/messages/poll", { key: newApiKey() }), 429, "TOO_MANY_REQUESTS");
    expectError(await call(server, "GET", "/api/messages/poll", { key: null }), 429, "TOO_MANY_REQUESTS");
  });

  test("X-Forwarded-For from a peer that is not a trusted proxy is ignored", async () => {
    const reply = await call(server, "GET", "/api/messages/poll", { key: newApiKey(), headers: { "x-forwarded-for": "203.0.113.99" } });
    expectError(reply, 429, "TOO_MANY_REQUESTS");
  });
});

describe("behind TRUSTED_PROXIES the client is the first untrusted address of X-Forwarded-For, from the right", () => {
  let server: Server;
  beforeAll(async () => {
    // The tests talk from 127.0.0.1: here it is a trusted proxy, as is 10.0.0.0/8.
    server = await startServer({ env: { TRUSTED_PROXIES: "127.0.0.1/32, 10.0.0.0/8, fd00::/8" } });
  }, 60_000);
  afterAll(() => server?.kill());

  const attempt = (forwardedFor?: string) =>
    call(server, "GET", "/api/messages/poll", { key: newApiKey(), headers: forwardedFor ? { "x-forwarded-for": forwardedFor } : {} });

  test("each forwarded client has its own count; a spoofed left part does not change whose it is", async () => {
    for (let i = 0; i < 20; i++) {
      // The client wrote a different address each time; our proxies appended 203.0.113.7 and 10.1.2.3.
      expect((await attempt(`198.51.100.${i}, 203.0.113.7, 10.1.2.3`)).status).toBe(401);
    }
    expectError(await attempt("203.0.113.7"), 429, "TOO_MANY_REQUESTS");
    expectError(await attempt("192.0.2.1, 203.0.113.7, 10.9.9.9"), 429, "TOO_MANY_REQUESTS");
    // Another client behind the same proxy is not locked out, nor is the proxy itself.
    expect((await attempt("203.0.113.8")).status).toBe(401);
    expect((await attempt("2001:db8::1, fd00::1")).status).toBe(401);
    expect((await attempt()).status).toBe(401);
    // A valid key forwarded for the locked-out client still passes.
    expect((await call(server, "GET", "/api/messages/poll", { headers: { "x-forwarded-for": "203.0.113.7" } })).status).toBe(200);
  });
});

describe("TRUSTED_PROXIES is validated at start", () => {
  test("a bad entry stops the server with one line naming the variable", async () => {
    const child = await spawnServer({ env: { TRUSTED_PROXIES: "10.0.0.0/8, proxy.internal" } });
    const code = await child.exited();
    expect(code).not.toBe(0);
    const out = lines(child.stderr);
    expect(out).toHaveLength(1);
    expect(out[0]).toContain("TRUSTED_PROXIES");
    expect(out[0]).toContain("proxy.internal");
  });
});
