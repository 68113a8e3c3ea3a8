// Authentication (SPEC §5, CONTRACT §3, §5): every message route needs
// `Authorization: Bearer <key>` (scheme case-insensitive), anything else is 401 with
// WWW-Authenticate: Bearer; failed attempts are throttled per address; keys never
// appear in answers or logs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, expectError, newPhone } from "./api";
import { newApiKey, startServer, type Server } from "./harness";

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
});
