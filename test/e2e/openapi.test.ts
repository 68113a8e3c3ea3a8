// GET /openapi.json is a valid OpenAPI 3.1 document of the REST routes with bearer
// security; GET /docs is a reference page served wholly by this server (CONTRACT §3).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { compileErrors, validate } from "@readme/openapi-parser";
import { startServer, type Server } from "./harness";

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
    ["/webhooks/loopback", "post", []],
  ];
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
      if (method === "post") expect(op.requestBody).toBeDefined();
    });
  }

  test("the document is public, the routes it describes are not", async () => {
    expect((await server.fetch("/api/messages/poll", {}, null)).status).toBe(401);
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

  test("points the reference at this server's /openapi.json", async () => {
    const { scripts } = assets();
    let text = html;
    for (const url of scripts) text += await (await fetch(new URL(url, `${server.url}/docs`))).text();
    expect(text).toContain("openapi.json");
  });
});
