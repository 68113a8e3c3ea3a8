// Every error status of docs/api.md for the routes in scope, each as the JSON envelope
// { success: false, error: { code, message } }, never leaking internals or keys,
// whatever NODE_ENV is; and the rate limit of docs/api.md.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectBadField, expectError, expectNoLeak, history, newPhone, type Reply } from "./api";
import { newApiKey, startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const ONE_MIB = 1024 * 1024;

/** A JSON send body of exactly `bytes` bytes. */
function sendBodyOfSize(bytes: number, phone: string): string {
  const empty = JSON.stringify({ phone, message: "" });
  return JSON.stringify({ phone, message: "a".repeat(bytes - empty.length) });
}

interface Case {
  name: string;
  status: number;
  code: string;
  request: (s: Server) => Promise<Reply<unknown>>;
}

const phone = "+14155550123";
/** One request for each error the routes in scope can give (429 has its own server below). */
const cases: Case[] = [
  {
    name: "400 for a malformed phone",
    status: 400,
    code: "BAD_REQUEST",
    request: (s) => call(s, "POST", "/api/send", { body: { phone: "+1 415", message: "hi" } }),
  },
  {
    name: "400 for malformed JSON",
    status: 400,
    code: "BAD_REQUEST",
    request: (s) => call(s, "POST", "/api/send", { raw: '{"phone": "+14155550123", "message": ', headers: { "content-type": "application/json" } }),
  },
  {
    name: "400 for a JSON body that is not an object",
    status: 400,
    code: "BAD_REQUEST",
    request: (s) => call(s, "POST", "/api/send", { raw: "[1,2,3]", headers: { "content-type": "application/json" } }),
  },
  {
    name: "400 for an empty JSON body",
    status: 400,
    code: "BAD_REQUEST",
    request: (s) => call(s, "POST", "/api/send", { raw: "", headers: { "content-type": "application/json" } }),
  },
  {
    name: "401 without a key",
    status: 401,
    code: "UNAUTHORIZED",
    request: (s) => call(s, "GET", `/api/messages/${encodeURIComponent(phone)}`, { key: null }),
  },
  {
    name: "404 for an unknown path under /api",
    status: 404,
    code: "NOT_FOUND",
    request: (s) => call(s, "GET", "/api/nothing-here"),
  },
  {
    name: "404 for an unknown top-level path",
    status: 404,
    code: "NOT_FOUND",
    request: (s) => call(s, "GET", "/no/such/page"),
  },
  {
    name: "404 for a path below a message history",
    status: 404,
    code: "NOT_FOUND",
    request: (s) => call(s, "GET", `/api/messages/${encodeURIComponent(phone)}/extra`),
  },
  {
    name: "405 for GET /api/send",
    status: 405,
    code: "METHOD_NOT_SUPPORTED",
    request: (s) => call(s, "GET", "/api/send"),
  },
  {
    name: "405 for DELETE on a message history",
    status: 405,
    code: "METHOD_NOT_SUPPORTED",
    request: (s) => call(s, "DELETE", `/api/messages/${encodeURIComponent(phone)}`),
  },
  {
    name: "405 for POST /api/messages/poll",
    status: 405,
    code: "METHOD_NOT_SUPPORTED",
    request: (s) => call(s, "POST", "/api/messages/poll", { body: {} }),
  },
  {
    name: "405 for GET /webhooks/loopback",
    status: 405,
    code: "METHOD_NOT_SUPPORTED",
    request: (s) => call(s, "GET", "/webhooks/loopback"),
  },
  {
    name: "413 for a body of 1 MiB + 1 byte",
    status: 413,
    code: "PAYLOAD_TOO_LARGE",
    request: (s) => call(s, "POST", "/api/send", { raw: sendBodyOfSize(ONE_MIB + 1, phone), headers: { "content-type": "application/json" } }),
  },
  {
    name: "415 for a text/plain body",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
    request: (s) => call(s, "POST", "/api/send", { raw: JSON.stringify({ phone, message: "hi" }), headers: { "content-type": "text/plain" } }),
  },
  {
    name: "415 for a form-encoded body",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
    request: (s) =>
      call(s, "POST", "/api/send", { raw: "phone=%2B14155550123&message=hi", headers: { "content-type": "application/x-www-form-urlencoded" } }),
  },
  {
    name: "415 for a text/plain body on the loopback webhook",
    status: 415,
    code: "UNSUPPORTED_MEDIA_TYPE",
    request: (s) => call(s, "POST", "/webhooks/loopback", { raw: JSON.stringify({ phone, message: "hi" }), headers: { "content-type": "text/plain" } }),
  },
];

function errorSuite(label: string, env: Record<string, string>) {
  describe(label, () => {
    let server: Server;
    beforeAll(async () => {
      server = await startServer({ env });
    }, 60_000);
    afterAll(() => server?.kill());

    for (const c of cases) {
      test(`${c.name}: the envelope with code ${c.code}, no stack, SQL, path or key`, async () => {
        expectError(await c.request(server), c.status, c.code, [server.apiKey]);
      });
    }

    test("401 carries WWW-Authenticate: Bearer", async () => {
      const reply = await call(server, "POST", "/api/send", { body: { phone, message: "hi" }, key: null });
      expectError(reply, 401, "UNAUTHORIZED");
      expect(reply.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i);
    });

    test("a 400 for a bad field names it and stores nothing", async () => {
      const p = newPhone();
      expectBadField(await call(server, "POST", "/api/send", { body: { phone: p, message: "\u0000" } }), "message", [server.apiKey]);
      expect((await history(server, p)).total).toBe(0);
    });

    test("a JSON body that is not an object: a 400 saying the body must be an object, not field errors", async () => {
      for (const [route, raw, kind] of [
        ["/api/send", "[1,2]", "an array"],
        ["/api/send", '"hello"', "a string"],
        ["/api/send", "3", "a number"],
        ["/api/send", "null", "null"],
        ["/webhooks/loopback", "[]", "an array"],
        ["/api/webhook-endpoints", "true", "a boolean"],
      ]) {
        const reply = await call(server, "POST", route!, { raw, headers: { "content-type": "application/json" } });
        const message = `must be a JSON object ({ … }), not ${kind}`;
        expect([route, raw, expectError(reply, 400, "BAD_REQUEST").error]).toEqual([route, raw, { code: "BAD_REQUEST", message: `body: ${message}`, issues: [{ path: "body", message }] }]);
      }
    });

    test("every 400 lists its issues: send_at, chat_id, reply_to, a webhook URL, the Idempotency-Key, malformed JSON", async () => {
      const p = newPhone();
      const cases: [string, string, Record<string, unknown> | string, string, Record<string, string>?][] = [
        ["/api/send", "send_at", { phone: p, message: "hi", send_at: "2001-01-01T00:00:00Z" }, "send_at"],
        ["/api/send", "chat_id", { chat_id: "grp_nothing", message: "hi" }, "chat_id"],
        ["/api/send", "reply_to", { phone: p, message: "hi", reply_to: crypto.randomUUID() }, "reply_to"],
        ["/api/webhook-endpoints", "url", { url: "http://example.com/hook" }, "url"],
        ["/api/send", "idempotency-key", { phone: p, message: "hi" }, "idempotency-key", { "idempotency-key": "\u00e9" }],
        ["/api/send", "malformed JSON", '{"phone":', "body"],
      ];
      for (const [route, what, body, path, headers] of cases) {
        const reply = await call(server, "POST", route, typeof body === "string" ? { raw: body, headers: { "content-type": "application/json" } } : { body, headers: headers ?? {} });
        const { error } = expectError(reply, 400, "BAD_REQUEST");
        expect([what, error.issues]).toEqual([what, [{ path, message: error.message.slice(path.length + 2) }]]);
      }
      expect((await history(server, p)).total).toBe(0);
    });

    test("a body just under 1 MiB is read (400 for the message length, not 413)", async () => {
      const reply = await call(server, "POST", "/api/send", { raw: sendBodyOfSize(ONE_MIB - 16, phone), headers: { "content-type": "application/json" } });
      expectBadField(reply, "message");
    });

    test("413 also for a chunked body over 1 MiB sent without Content-Length", async () => {
      const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(`{"phone":"${phone}","message":"`));
        },
        pull(controller) {
          if (sent >= ONE_MIB + chunk.length) {
            controller.enqueue(new TextEncoder().encode('"}'));
            controller.close();
            return;
          }
          controller.enqueue(chunk);
          sent += chunk.length;
        },
      });
      let reply: Reply<unknown>;
      try {
        reply = await call(server, "POST", "/api/send", { raw: body, headers: { "content-type": "application/json" } });
      } catch (err) {
        throw new Error(`the server dropped the connection instead of answering 413: ${String(err)}`);
      }
      expectError(reply, 413, "PAYLOAD_TOO_LARGE", [server.apiKey]);
    });

    test("a wrong key is 401 and the answer does not echo it", async () => {
      const wrong = newApiKey();
      const reply = await call(server, "GET", "/api/messages/poll", { key: wrong });
      expectError(reply, 401, "UNAUTHORIZED", [wrong, server.apiKey]);
    });

    test("a SQL-looking phone is a plain 400", async () => {
      const reply = await call(server, "GET", `/api/messages/${encodeURIComponent("'; DROP TABLE messages; --")}`);
      expect(reply.status).toBe(400);
      expectNoLeak(reply.text, [server.apiKey]);
    });
  });
}

errorSuite("errors with NODE_ENV unset", {});
errorSuite("errors with NODE_ENV=development", { NODE_ENV: "development" });
errorSuite("errors with NODE_ENV=production", { NODE_ENV: "production" });

describe("rate limit per API key (RATE_LIMIT_PER_MINUTE=1, RATE_LIMIT_BURST=3)", () => {
  let server: Server;
  const other = newApiKey();
  beforeAll(async () => {
    const key = newApiKey();
    server = await startServer({ apiKey: key, env: { API_KEYS: `${key},${other}`, RATE_LIMIT_PER_MINUTE: "1", RATE_LIMIT_BURST: "3" } });
  }, 60_000);
  afterAll(() => server?.kill());

  test("a burst of 3 passes; the 4th is 429 with Retry-After and RateLimit headers; another key is unaffected", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await call(server, "GET", "/api/messages/poll")).status);
    expect(statuses).toEqual([200, 200, 200]);

    const limited = await call(server, "POST", "/api/send", { body: { phone, message: "one too many" } });
    expectError(limited, 429, "TOO_MANY_REQUESTS", [server.apiKey]);
    const retryAfter = limited.headers.get("retry-after") ?? "";
    expect(retryAfter).toMatch(/^\d+$/);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(retryAfter)).toBeLessThanOrEqual(60);
    expect(limited.headers.get("ratelimit-limit") ?? "").toMatch(/^\d+/);
    expect(limited.headers.get("ratelimit-remaining")).toBe("0");
    expect(limited.headers.get("ratelimit-reset") ?? "").toMatch(/^\d+$/);

    // The refused send was not stored.
    const check = await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`, { key: other });
    expect(check.status).toBe(200);
    expect(check.body.total).toBe(0);

    // Still limited on the next request, on any route.
    expect((await call(server, "GET", `/api/messages/${encodeURIComponent(phone)}`)).status).toBe(429);
  });

  test("with RATE_LIMIT_PER_MINUTE=0 there is no limit", async () => {
    const open = await startServer({ env: { RATE_LIMIT_PER_MINUTE: "0", RATE_LIMIT_BURST: "1" } });
    try {
      const statuses = await Promise.all(Array.from({ length: 30 }, () => call(open, "GET", "/api/messages/poll").then((r) => r.status)));
      expect(statuses.every((s) => s === 200)).toBe(true);
    } finally {
      open.kill();
    }
  });
});
