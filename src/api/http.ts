import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { TRPCError } from "@trpc/server";
import { createOpenApiNodeHttpHandler } from "trpc-to-openapi";
import type { App } from "../app";
import { errorText } from "../log";
import { AppError, issuesMessage, type ErrorCode, type FieldIssue } from "../errors";
import { applyNetworkEvents } from "../messages/network-events";
import { describeError, errorResponse, HTTP_STATUS, type ErrorBody } from "./errors";
import { authenticate } from "./auth";
import { buildOpenApiDocument, docsResponse, routeTable } from "./openapi";
import { createAppRouter } from "./router";
import type { Context } from "./trpc";

/** Largest request body accepted (CONTRACT §4). */
export const MAX_BODY_BYTES = 1024 * 1024;

const CONTEXT = Symbol("textwire.context");
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Reads at most MAX_BODY_BYTES of a request body, as strict UTF-8. */
async function readBody(req: Request): Promise<string> {
  const declared = Number(req.headers.get("content-length") ?? NaN);
  const tooLarge = () => new AppError("PAYLOAD_TOO_LARGE", `body: larger than ${MAX_BODY_BYTES} bytes`);
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  let bytes: Uint8Array;
  if (Number.isFinite(declared) || !req.body) {
    bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.length > MAX_BODY_BYTES) throw tooLarge();
  } else {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of req.body) {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) throw tooLarge();
      chunks.push(chunk);
    }
    bytes = Buffer.concat(chunks);
  }
  try {
    return utf8.decode(bytes);
  } catch {
    throw new AppError("BAD_REQUEST", "body: not valid UTF-8");
  }
}

/** A JSON request body: 415 unless application/json, 413 when too large, 400 when malformed. */
async function readJsonBody(req: Request): Promise<unknown> {
  const type = req.headers.get("content-type")?.toLowerCase() ?? "";
  if (!type.startsWith("application/json")) {
    throw new AppError("UNSUPPORTED_MEDIA_TYPE", `content-type: must be application/json${type ? ` (got ${type.split(";")[0]})` : ""}`);
  }
  const text = await readBody(req);
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError("BAD_REQUEST", "body: malformed JSON");
  }
}

function queryOf(url: URL): Record<string, string[]> {
  // No prototype: a parameter named __proto__ or toString is just a name.
  const query: Record<string, string[]> = Object.create(null);
  for (const [key, value] of url.searchParams) (query[key] ??= []).push(value);
  return query;
}

/** The REST error body trpc-to-openapi wrote, back into our envelope. */
function restErrorBody(text: string): ErrorBody {
  try {
    const body = JSON.parse(text) as { data?: { code?: ErrorBody["code"]; issues?: FieldIssue[] }; message?: string };
    const issues = body.data?.issues;
    if (body.data?.code) {
      return issues
        ? { code: body.data.code, message: issuesMessage(issues), issues }
        : { code: body.data.code, message: body.message ?? body.data.code };
    }
  } catch {}
  return { code: "INTERNAL_SERVER_ERROR", message: "internal error; the request may be retried later" };
}

export interface HttpHandler {
  fetch(req: Request, ip: string): Promise<Response>;
}

/**
 * The HTTP face of the one router: REST through trpc-to-openapi, tRPC at /trpc, and the
 * routes without a key (/health, /openapi.json, /docs). Every error leaves as the envelope.
 */
export function createHttpHandler(app: App): HttpHandler {
  const router = createAppRouter(app.config.MAX_MESSAGE_LENGTH);
  const openApiJson = JSON.stringify(buildOpenApiDocument(router, app.network.name));
  const routes = routeTable(JSON.parse(openApiJson));

  const onError = ({ error, ctx }: { error: TRPCError; ctx?: Context }) => {
    if (error.code !== "INTERNAL_SERVER_ERROR") return;
    app.log.error("request failed", {
      requestId: ctx?.requestId,
      error: errorText(error.cause ?? error),
      stack: (error.cause as Error | undefined)?.stack,
    });
  };
  const responseMeta = ({ ctx }: { ctx?: Context }) => ({ headers: ctx?.responseHeaders ?? {} });

  // Built once: trpc-to-openapi's own fetch adapter rebuilds this on every request.
  const rest = createOpenApiNodeHttpHandler({
    router,
    createContext: ({ req }: { req: { [CONTEXT]: Context } }) => req[CONTEXT],
    responseMeta,
    onError,
  } as never) as unknown as (req: Request, res: object) => Promise<void>;

  async function serveRest(req: Request, url: URL, ctx: Context): Promise<Response> {
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : await readJsonBody(req);
    const query = queryOf(url);
    const proxy = new Proxy(req, {
      get(target, prop) {
        if (prop === CONTEXT) return ctx;
        if (prop === "body") return body;
        if (prop === "query") return query;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    return new Promise<Response>((resolve, reject) => {
      let statusCode = 200;
      const res = {
        setHeader(key: string, value: string | string[]) {
          ctx.responseHeaders[key] = Array.isArray(value) ? value.join(", ") : value;
        },
        get statusCode() {
          return statusCode;
        },
        set statusCode(code: number) {
          statusCode = code;
        },
        end(text: string) {
          if (statusCode >= 400) resolve(errorResponse(restErrorBody(text), ctx.responseHeaders));
          else resolve(new Response(text, { status: statusCode, headers: ctx.responseHeaders }));
        },
      };
      rest(proxy, res).catch(reject);
    });
  }

  async function serveTrpc(req: Request, ctx: Context): Promise<Response> {
    let trpcReq = req;
    if (req.method === "POST") {
      trpcReq = new Request(req.url, { method: "POST", headers: req.headers, body: await readBody(req) });
    }
    const res = await fetchRequestHandler({
      endpoint: "/trpc",
      req: trpcReq,
      router,
      createContext: () => ({ ...ctx, req: trpcReq }),
      responseMeta,
      onError,
    });
    for (const [k, v] of Object.entries(ctx.responseHeaders)) if (!res.headers.has(k)) res.headers.set(k, v);
    if (res.ok || res.headers.get("content-type")?.startsWith("application/json")) return res;
    // tRPC answers some protocol errors (415, 405, mixed batches) as text: every error is JSON.
    const text = await res.text();
    const headers = new Headers(res.headers);
    headers.set("Content-Type", "application/json");
    try {
      JSON.parse(text);
      return new Response(text, { status: res.status, headers });
    } catch {
      const code = (Object.keys(HTTP_STATUS) as ErrorCode[]).find((c) => HTTP_STATUS[c] === res.status) ?? "BAD_REQUEST";
      return errorResponse({ code, message: text.slice(0, 200) || code }, Object.fromEntries(headers));
    }
  }

  /** A network's own webhook (`/webhooks/twilio`, `/webhooks/twilio/status`, …): verified by its driver. */
  async function serveNetworkWebhook(req: Request, url: URL, subpath: string): Promise<Response> {
    const driver = app.network;
    if (!driver.webhook) return errorResponse({ code: "NOT_FOUND", message: `no route ${req.method} ${url.pathname}` });
    if (req.method !== "POST") {
      return errorResponse({ code: "METHOD_NOT_SUPPORTED", message: `method ${req.method} not allowed on ${url.pathname}; use POST` }, { Allow: "POST" });
    }
    const body = await readBody(req);
    const { response, ...events } = await driver.webhook({ url, subpath, headers: req.headers, body });
    const applied = applyNetworkEvents(app.store, driver.name, events, app.log);
    app.log.info("webhook", { network: driver.name, ...applied });
    return response;
  }

  function routeError(method: string, path: string): Response | null {
    const matching = routes.filter((r) => r.pattern.test(path));
    if (matching.length === 0) return errorResponse({ code: "NOT_FOUND", message: `no route ${method} ${path}` });
    if (matching.some((r) => r.method === method)) return null;
    const allow = [...new Set(matching.map((r) => r.method))].join(", ");
    return errorResponse({ code: "METHOD_NOT_SUPPORTED", message: `method ${method} not allowed on ${path}; use ${allow}` }, { Allow: allow });
  }

  async function route(req: Request, ip: string, requestId: string): Promise<Response> {
    const url = new URL(req.url);
    const path = url.pathname;
    const ctx: Context = { app, req, ip, requestId, responseHeaders: {} };
    if (path === "/health" && (req.method === "GET" || req.method === "HEAD")) return Response.json({ status: "ok" });
    if (path === "/openapi.json" && req.method === "GET") {
      return new Response(openApiJson, { headers: { "Content-Type": "application/json" } });
    }
    if (path === "/docs" || path.startsWith("/docs/")) {
      const docs = req.method === "GET" ? docsResponse(path) : null;
      if (docs) return docs;
    }
    const signIn = () => {
      const { keyId, headers } = authenticate(app, req, ip);
      ctx.keyId = keyId;
      Object.assign(ctx.responseHeaders, headers);
    };
    if (path.startsWith("/trpc/")) {
      // tRPC clients read errors in tRPC's format: the procedure throws it.
      try {
        signIn();
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        ctx.authError = err;
      }
      return serveTrpc(req, ctx);
    }
    const webhook = /^\/webhooks\/([a-z]+)(?:\/(.*))?$/.exec(path);
    if (webhook && webhook[1] === app.network.name && app.network.name !== "loopback") {
      return serveNetworkWebhook(req, url, webhook[2] ?? "");
    }
    const unrouted = routeError(req.method, path);
    if (unrouted) return unrouted;
    signIn();
    return serveRest(req, url, ctx);
  }

  return {
    async fetch(req, ip) {
      const requestId = Bun.randomUUIDv7();
      const started = performance.now();
      let res: Response;
      try {
        res = await route(req, ip, requestId);
      } catch (err) {
        if (err instanceof AppError) res = errorResponse({ code: err.code, message: err.message }, err.headers);
        else {
          app.log.error("request failed", { requestId, error: errorText(err), stack: (err as Error)?.stack });
          res = errorResponse(describeError({ code: "INTERNAL_SERVER_ERROR" } as TRPCError));
        }
      }
      res.headers.set("X-Request-Id", requestId);
      app.log.info("request", {
        requestId,
        method: req.method,
        path: req.url.slice(req.url.indexOf("/", 8)).split("?")[0],
        status: res.status,
        ms: Math.round((performance.now() - started) * 10) / 10,
      });
      return res;
    },
  };
}
