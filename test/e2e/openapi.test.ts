// GET /openapi.json is a valid OpenAPI 3.1 document of the REST routes with bearer
// security; GET /docs is a reference page served wholly by this server (docs/api.md).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

type Json = Record<string, unknown>;
interface Operation {
  parameters?: { name?: string; in?: string }[];
  security?: Record<string, unknown>[];
  requestBody?: unknown;
}

async function getDocument(): Promise<Json> {
  const res = await server.fetch("/openapi.json", {}, null);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type") ?? "").toContain("application/json");
  return (await res.json()) as Json;
}

describe("GET /openapi.json", () => {
  let doc: Json;
  beforeAll(async () => {
    doc = await getDocument();
  }, 60_000);

  test("is OpenAPI 3.1 and valid according to @readme/openapi-parser", async () => {
    expect(String(doc.openapi)).toMatch(/^3\.1\.\d+$/);
    const result = await validate(structuredClone(doc) as never);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);
  });

  test("declares an HTTP bearer security scheme", () => {
    const schemes = ((doc.components as Json | undefined)?.securitySchemes ?? {}) as Record<string, { type?: string; scheme?: string }>;
    const bearer = Object.values(schemes).filter((s) => s.type === "http" && s.scheme?.toLowerCase() === "bearer");
    expect(bearer.length).toBeGreaterThan(0);
  });

  const routes: [string, string, string[]][] = [
    ["/api/send", "post", []],
    ["/api/messages/{phone}", "get", ["phone", "limit", "offset"]],
    ["/api/messages/poll", "get", ["since", "phone"]],
    ["/api/messages/scheduled", "get", ["limit", "offset"]],
    ["/api/messages/{id}/cancel", "post", ["id"]],
    ["/webhooks/loopback", "post", []],
    ["/api/webhook-endpoints", "post", []],
    ["/api/webhook-endpoints", "get", []],
    ["/api/webhook-endpoints/{id}", "get", ["id"]],
    ["/api/webhook-endpoints/{id}", "patch", ["id"]],
    ["/api/webhook-endpoints/{id}", "delete", ["id"]],
    ["/api/webhook-endpoints/{id}/rotate-secret", "post", ["id"]],
    ["/api/webhook-endpoints/{id}/deliveries", "get", ["id", "status", "limit"]],
    ["/api/webhook-endpoints/{id}/replay", "post", ["id"]],
    ["/api/webhook-endpoints/{id}/deliveries/{delivery_id}/retry", "post", ["id", "delivery_id"]],
    ["/api/events", "get", ["since", "type", "limit"]],
  ];
  // POSTs that take nothing but the path.
  const bodyless = new Set(["/api/messages/{id}/cancel", "/api/webhook-endpoints/{id}/rotate-secret", "/api/webhook-endpoints/{id}/deliveries/{delivery_id}/retry"]);
  for (const [path, method, params] of routes) {
    test(`documents ${method.toUpperCase()} ${path}, protected by the bearer scheme${params.length ? `, with ${params.join(", ")}` : ""}`, () => {
      const paths = (doc.paths ?? {}) as Record<string, Record<string, Operation>>;
      const op = paths[path]?.[method];
      if (!op) throw new Error(`${method.toUpperCase()} ${path} is missing; paths: ${Object.keys(paths).join(", ")}`);

      const schemes = ((doc.components as Json | undefined)?.securitySchemes ?? {}) as Record<string, { type?: string; scheme?: string }>;
      const bearerNames = Object.entries(schemes)
        .filter(([, s]) => s.type === "http" && s.scheme?.toLowerCase() === "bearer")
        .map(([name]) => name);
      const security = op.security ?? (doc.security as Record<string, unknown>[] | undefined) ?? [];
      expect(security.some((req) => Object.keys(req).some((name) => bearerNames.includes(name)))).toBe(true);

      const names = (op.parameters ?? []).map((p) => p.name);
      for (const p of params) expect(names).toContain(p);
      if (method === "post" || method === "patch") expect(op.requestBody === undefined).toBe(bodyless.has(path));
    });
  }

  const op = (path: string, method: string) => ((doc.paths as Json)[path] as Json)[method] as Json;
  const resolve = (node: Json): Json =>
    typeof node.$ref === "string" ? (node.$ref.slice(2).split("/").reduce((n: Json, k: string) => n[k] as Json, doc) as Json) : node;
  const keyed: [string, string][] = [
    ["/api/send", "post"],
    ["/api/generate", "post"],
    ["/api/messages/{phone}", "get"],
    ["/api/messages/poll", "get"],
    ["/api/messages/scheduled", "get"],
    ["/api/messages/{id}/cancel", "post"],
    ["/webhooks/loopback", "post"],
    ["/api/webhook-endpoints", "post"],
    ["/api/webhook-endpoints/{id}", "patch"],
    ["/api/webhook-endpoints/{id}/deliveries", "get"],
    ["/api/events", "get"],
  ];

  test("POST /api/send and /api/generate take an Idempotency-Key header of 1 to 255 printable characters", () => {
    for (const path of ["/api/send", "/api/generate"]) {
      const param = (op(path, "post").parameters as Json[]).find((p) => p.name === "Idempotency-Key");
      expect(param).toMatchObject({ in: "header" });
      expect(param!.required ?? false).toBe(false);
      expect(String(param!.description)).toContain("1 to 255 printable");
      const pattern = new RegExp((param!.schema as Json).pattern as string);
      expect(pattern.test("a")).toBe(true);
      expect(pattern.test("x".repeat(255))).toBe(true);
      expect(pattern.test("")).toBe(false);
      expect(pattern.test("x".repeat(256))).toBe(false);
      expect(pattern.test("caf\u00e9")).toBe(false);
    }
  });

  test("every parameter is described; limit and offset are integers, since and phone say what they mean", () => {
    for (const item of Object.values(doc.paths as Json) as Json[]) {
      for (const operation of Object.values(item) as Json[]) {
        for (const p of (operation.parameters ?? []) as Json[]) expect([p.name, typeof p.description, String(p.description).length > 10]).toEqual([p.name, "string", true]);
      }
    }
    const param = (path: string, name: string) => (op(path, "get").parameters as Json[]).find((p) => p.name === name)!;
    for (const [path, name] of [
      ["/api/messages/{phone}", "limit"],
      ["/api/messages/{phone}", "offset"],
      ["/api/messages/poll", "limit"],
      ["/api/messages/scheduled", "limit"],
      ["/api/messages/scheduled", "offset"],
    ] as const) {
      const schema = param(path, name).schema as Json;
      expect([name, schema.type, schema.anyOf]).toEqual([name, "integer", undefined]);
    }
    const since = String(param("/api/messages/poll", "since").description);
    for (const word of ["Exclusive", "ISO 8601", "UTC", "Omitted"]) expect(since).toContain(word);
    expect(String(param("/api/messages/poll", "phone").description)).toContain("E.164");
  });

  test("every error answer is the envelope, its code one of the error codes", () => {
    const schemas = (doc.components as Json).schemas as Json;
    // Every code of src/errors.ts (the edge may add its own, such as 431's).
    expect((schemas.ErrorCode as Json).enum).toEqual(expect.arrayContaining([
      "BAD_REQUEST", "UNAUTHORIZED", "FORBIDDEN", "NOT_FOUND", "METHOD_NOT_SUPPORTED", "CONFLICT", "PAYLOAD_TOO_LARGE",
      "UNSUPPORTED_MEDIA_TYPE", "TOO_MANY_REQUESTS", "INTERNAL_SERVER_ERROR", "BAD_GATEWAY", "SERVICE_UNAVAILABLE", "GATEWAY_TIMEOUT",
    ]));
    for (const [path, method] of keyed) {
      const responses = op(path, method).responses as Json;
      for (const status of ["401", "405", "429", "500"]) expect([path, status, status in responses]).toEqual([path, status, true]);
      for (const [status, response] of Object.entries(responses)) {
        if (status === "200" || status === "201") continue;
        const schema = ((resolve(response as Json).content as Json)["application/json"] as Json).schema as Json;
        expect(String(schema.$ref)).toMatch(/^#\/components\/schemas\/(Error|GatewayTimeoutError)$/);
      }
    }
    for (const path of ["/api/send", "/api/generate"]) {
      const responses = op(path, "post").responses as Json;
      for (const status of ["409", "413", "415", "502", "504"]) expect([path, status, status in responses]).toEqual([path, status, true]);
      const timeout = (((responses["504"] as Json).content as Json)["application/json"] as Json).schema as Json;
      const error = ((resolve(timeout).properties as Json).error as Json);
      expect(error.required).toContain("message_id");
    }
    expect("503" in (op("/api/generate", "post").responses as Json)).toBe(true);
    expect(Object.keys(op("/api/messages/{id}/cancel", "post").responses as Json)).toEqual(expect.arrayContaining(["200", "404", "409"]));
  });

  test("send_at, the statuses scheduled and canceled, and the record's send_at are documented", () => {
    const schemas = (doc.components as Json).schemas as Json;
    const message = resolve(schemas.Message as Json).properties as Json;
    expect((message.status as Json).enum).toEqual(expect.arrayContaining(["scheduled", "queued", "sent", "delivered", "failed", "canceled", "received"]));
    expect(String((message.send_at as Json).description)).toContain("ISO 8601");
    const body = resolve((((op("/api/send", "post").requestBody as Json).content as Json)["application/json"] as Json).schema as Json);
    const sendAt = (body.properties as Json).send_at as Json;
    for (const word of ["ISO 8601", "UTC", "1 year", "scheduled"]) expect(String(sendAt.description)).toContain(word);
    expect((body.required as string[]).includes("send_at")).toBe(false);
  });

  test("response headers are documented on the responses that carry them", () => {
    const headersOf = (path: string, method: string, status: string) =>
      Object.keys((resolve((op(path, method).responses as Json)[status] as Json).headers ?? {}) as Json);
    for (const [path, method] of keyed) {
      for (const status of Object.keys(op(path, method).responses as Json)) expect(headersOf(path, method, status)).toContain("X-Request-Id");
      const success = "201" in (op(path, method).responses as Json) ? "201" : "200";
      for (const status of [success, "400", "429"]) expect(headersOf(path, method, status)).toEqual(expect.arrayContaining(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]));
      expect(headersOf(path, method, "429")).toContain("Retry-After");
      expect(headersOf(path, method, "401")).toContain("WWW-Authenticate");
      expect(headersOf(path, method, "405")).toContain("Allow");
    }
    for (const path of ["/api/send", "/api/generate"]) expect(headersOf(path, "post", "200")).toContain("Idempotent-Replayed");
    const headers = (doc.components as Json).headers as Json;
    expect((headers["Retry-After"] as Json).required).toBe(true);
  });

  test("documents /health (GET and HEAD) without a key: 200 ok, 503 unavailable", () => {
    for (const method of ["get", "head"]) {
      const health = op("/health", method);
      expect(health.security).toEqual([]);
      expect(Object.keys(health.responses as Json)).toEqual(expect.arrayContaining(["200", "503"]));
    }
    const example = (status: string) => (((((op("/health", "get").responses as Json)[status] as Json).content as Json)["application/json"] as Json).example);
    expect(example("200")).toEqual({ status: "ok" });
    expect(example("503")).toEqual({ status: "unavailable", reason: "database" });
  });

  test("documents /health/live (never 503) and /health/ready (503 when the database takes no write or a shutdown began) without a key", () => {
    for (const method of ["get", "head"]) {
      expect(op("/health/live", method).security).toEqual([]);
      expect(Object.keys(op("/health/live", method).responses as Json)).not.toContain("503");
      expect(op("/health/ready", method).security).toEqual([]);
      expect(Object.keys(op("/health/ready", method).responses as Json)).toContain("503");
    }
    const health = resolve({ $ref: "#/components/schemas/Health" });
    expect(((health.properties as Json).reason as Json).enum).toEqual(["database", "shutting down"]);
  });

  test("POST /api/webhook-endpoints answers 201 with the secret; every route taking an endpoint id documents 404", () => {
    const responses = op("/api/webhook-endpoints", "post").responses as Json;
    expect(Object.keys(responses)).toContain("201");
    expect(Object.keys(responses)).not.toContain("200");
    const schema = resolve((((responses["201"] as Json).content as Json)["application/json"] as Json).schema as Json);
    expect(String((((schema.properties as Json).endpoint as Json).$ref))).toBe("#/components/schemas/WebhookEndpointWithSecret");
    for (const [path, method] of routes) {
      if (path.includes("{id}")) expect([path, method, "404" in (op(path, method).responses as Json)]).toEqual([path, method, true]);
    }
    const events = ((doc.components as Json).schemas as Json).Event as Json;
    expect((events.oneOf as Json[]).length).toBe(20);
  });

  test("the document is public, the routes it describes are not", async () => {
    expect((await server.fetch("/api/messages/poll", {}, null)).status).toBe(401);
  });

  test("its description names every route that takes no key, and each answers without one", async () => {
    const description = String((doc.info as Json).description);
    const keyless = ["/health", "/health/live", "/health/ready", "/metrics", "/openapi.json", "/docs", "/console", "/media/:id"];
    for (const path of keyless) expect(description).toContain(` ${path}`);
    for (const path of keyless) {
      const res = await server.fetch(path.replace(":id", "med_nothing"), {}, null);
      expect([path, res.status === 401]).toEqual([path, false]);
    }
  });
});

describe("GET /docs", () => {
  let html = "";
  beforeAll(async () => {
    const res = await server.fetch("/docs", {}, null);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type") ?? "").toContain("text/html");
    html = await res.text();
  }, 60_000);

  const assets = () => {
    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    const styles = [...html.matchAll(/<link\b[^>]*\bhref\s*=\s*["']([^"']+)["'][^>]*>/gi)]
      .filter((m) => /rel\s*=\s*["']?stylesheet/i.test(m[0]))
      .map((m) => m[1]!);
    return { scripts, styles };
  };

  test("is an HTML page that loads scripts", () => {
    expect(html).toMatch(/<html/i);
    expect(assets().scripts.length).toBeGreaterThan(0);
  });

  test("loads nothing from another host (no CDN)", () => {
    const { scripts, styles } = assets();
    for (const url of [...scripts, ...styles]) {
      const target = new URL(url, `${server.url}/docs`);
      expect(target.origin).toBe(server.url);
    }
    expect(html).not.toMatch(/unpkg\.com|jsdelivr\.net|cdnjs\.cloudflare\.com|googleapis\.com/i);
  });

  test("every script and stylesheet it references is served (200) with a fitting type", async () => {
    const { scripts, styles } = assets();
    for (const [list, type] of [
      [scripts, /javascript/],
      [styles, /text\/css/],
    ] as const) {
      for (const url of list) {
        const res = await fetch(new URL(url, `${server.url}/docs`));
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
        expect(res.headers.get("content-type") ?? "").toMatch(type);
        expect(body.length).toBeGreaterThan(0);
      }
    }
  });

  test("keeps no key in localStorage, and is served with a CSP and X-Frame-Options: DENY as /console is", async () => {
    const { scripts } = assets();
    const init = await (await fetch(new URL(scripts.find((u) => u.includes("init"))!, `${server.url}/docs`))).text();
    // Swagger UI's persistAuthorization writes the typed key to localStorage.
    expect(init).toContain("persistAuthorization: false");
    for (const path of ["/docs", ...scripts]) {
      const res = await fetch(new URL(path, `${server.url}/docs`));
      await res.arrayBuffer();
      expect([path, res.headers.get("x-frame-options")]).toEqual([path, "DENY"]);
      const csp = res.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toMatch(/script-src 'self'(;|$)/);
    }
  });

  test("points the reference at this server's /openapi.json", async () => {
    const { scripts } = assets();
    let text = html;
    for (const url of scripts) text += await (await fetch(new URL(url, `${server.url}/docs`))).text();
    expect(text).toContain("openapi.json");
  });
});
