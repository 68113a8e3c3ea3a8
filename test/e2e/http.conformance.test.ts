// HTTP conformance of the edge (docs/api.md "HTTP behaviour"): headers too large are a
// JSON 431, HEAD is served wherever GET is, a wrong method is 405 with Allow on every
// known path, the media type is exactly application/json, and a client that hangs up
// mid-request is logged at info, never as a 500.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectError, newPhone } from "./api";
import { lines, startServer, waitFor, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

const phone = "+14155550123";
const historyPath = `/api/messages/${encodeURIComponent(phone)}`;

describe("headers too large: 431 with the JSON envelope", () => {
  // 16 KiB is Bun's default parser limit; `bun run start` raises it to 64 KiB so ours answers first.
  for (const size of [17 * 1024, 60 * 1024]) {
    test(`one header of ${size / 1024} KiB`, async () => {
      const reply = await call(server, "GET", "/api/messages/poll", { headers: { "x-padding": "a".repeat(size) } });
      expectError(reply, 431, "REQUEST_HEADER_FIELDS_TOO_LARGE", [server.apiKey]);
      expect(reply.body).toMatchObject({ error: { message: expect.stringContaining("headers") } });
    });
  }

  test("a request line of 20 KiB, on a public route too", async () => {
    expectError(await call(server, "GET", `/health?pad=${"a".repeat(20 * 1024)}`, { key: null }), 431, "REQUEST_HEADER_FIELDS_TOO_LARGE");
  });

  test("many headers that add up past the limit", async () => {
    const headers = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`x-pad-${i}`, "b".repeat(500)]));
    expectError(await call(server, "POST", "/api/send", { headers, body: { phone, message: "hi" } }), 431, "REQUEST_HEADER_FIELDS_TOO_LARGE");
  });

  test("12 KiB of headers is still served", async () => {
    expect((await call(server, "GET", "/api/messages/poll", { headers: { "x-padding": "a".repeat(12 * 1024) } })).status).toBe(200);
  });
});

describe("HEAD is served wherever GET is: same status and headers, no body", () => {
  for (const [path, key] of [
    ["/health", null],
    ["/openapi.json", null],
    ["/docs", null],
    ["/docs/swagger-ui.css", null],
    ["/api/messages/poll", undefined],
    [historyPath, undefined],
    [`/trpc/messages.poll?input=${encodeURIComponent("{}")}`, undefined],
  ] as const) {
    test(`HEAD ${path}`, async () => {
      const get = await server.fetch(path, { method: "GET" }, key);
      const getBody = await get.arrayBuffer();
      const head = await server.fetch(path, { method: "HEAD" }, key);
      expect(await head.text()).toBe("");
      expect(head.status).toBe(200);
      expect(get.status).toBe(200);
      expect(head.headers.get("content-type")).toBe(get.headers.get("content-type"));
      expect(head.headers.get("content-length")).toBe(String(getBody.byteLength));
      expect(head.headers.get("x-request-id") ?? "").not.toBe("");
    });
  }

  test("HEAD on a protected route needs the key", async () => {
    const head = await server.fetch("/api/messages/poll", { method: "HEAD" }, null);
    expect(head.status).toBe(401);
    expect(head.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/i);
  });
});

describe("a known path with a method it does not serve: 405 with Allow", () => {
  const cases: [string, string, string][] = [
    ["POST", "/health", "GET, HEAD"],
    ["DELETE", "/health", "GET, HEAD"],
    ["PUT", "/openapi.json", "GET, HEAD"],
    ["POST", "/docs", "GET, HEAD"],
    ["GET", "/api/send", "POST"],
    ["HEAD", "/api/send", "POST"],
    ["PATCH", "/api/generate", "POST"],
    ["POST", "/api/messages/poll", "GET, HEAD"],
    ["DELETE", historyPath, "GET, HEAD"],
    ["GET", "/webhooks/loopback", "POST"],
    ["PUT", "/trpc/messages.send", "GET, POST, HEAD"],
    ["OPTIONS", "/api/send", "POST"],
  ];
  for (const [method, path, allow] of cases) {
    test(`${method} ${path}: Allow: ${allow}`, async () => {
      const reply = await call(server, method, path);
      expect(reply.headers.get("allow")).toBe(allow);
      if (method !== "HEAD") expectError(reply, 405, "METHOD_NOT_SUPPORTED", [server.apiKey]);
      else expect(reply.status).toBe(405);
    });
  }

  test("an unknown path is still 404", async () => {
    expectError(await call(server, "POST", "/healthz"), 404, "NOT_FOUND");
  });
});

describe("the media type is exactly application/json (parameters allowed)", () => {
  for (const type of ["application/jsonx", "application/json-patch+json", "application/json5", "text/json", "application/x-json"]) {
    test(`${type}: 415, nothing stored`, async () => {
      const p = newPhone();
      const reply = await call(server, "POST", "/api/send", { raw: JSON.stringify({ phone: p, message: "hi" }), headers: { "content-type": type } });
      expectError(reply, 415, "UNSUPPORTED_MEDIA_TYPE", [server.apiKey]);
      expect((await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(p)}`)).body.total).toBe(0);
    });
  }

  test("application/jsonx on /trpc and on the loopback webhook: 415", async () => {
    const raw = JSON.stringify({ phone, message: "hi" });
    expect((await call(server, "POST", "/trpc/messages.send", { raw, headers: { "content-type": "application/jsonx" } })).status).toBe(415);
    expectError(await call(server, "POST", "/webhooks/loopback", { raw, headers: { "content-type": "application/jsonx" } }), 415, "UNSUPPORTED_MEDIA_TYPE");
  });

  for (const type of ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8", "application/json ; charset=utf-8"]) {
    test(`${type}: accepted`, async () => {
      const reply = await call(server, "POST", "/api/send", { raw: JSON.stringify({ phone: newPhone(), message: "hi" }), headers: { "content-type": type } });
      expect(reply.status).toBe(200);
    });
  }
});

describe("a client that hangs up mid-request", () => {
  test("is logged at info (499), never as an error or a 500, and the server keeps serving", async () => {
    const { hostname, port } = new URL(server.url);
    const body = JSON.stringify({ phone, message: "this body never arrives whole" });
    for (let i = 0; i < 3; i++) {
      const socket = await Bun.connect({ hostname, port: Number(port), socket: { data() {} } });
      socket.write(
        `POST /api/send HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${server.apiKey}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
      );
      await Bun.sleep(50);
      socket.end();
    }
    const closed = () => lines(server.stdout).filter((l) => l.includes('"status":499'));
    await waitFor("three hang-ups in the log", 10_000, () => closed().length >= 3, () => server.stdout);
    for (const line of closed()) expect(JSON.parse(line)).toMatchObject({ level: "info", msg: "client closed the request", method: "POST", path: "/api/send" });
    const bad = lines(server.stdout).filter((l) => /"level":"error"|"status":500/.test(l));
    expect(bad).toEqual([]);
    expect(server.stderr).not.toMatch(/error/i);
    expect((await call(server, "GET", "/health", { key: null })).status).toBe(200);
    expect((await call(server, "POST", "/api/send", { body: { phone: newPhone(), message: "still here" } })).status).toBe(200);
  });
});
