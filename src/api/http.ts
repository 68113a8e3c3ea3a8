import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { handoffOf } from "../messages/modes";
import type { App } from "../app";
import { errorText } from "../log";
import { annotateSpan, withRequestSpan } from "../observability/trace";
import { AppError, type ErrorCode } from "../errors";
import type { Line } from "../lines/registry";
import { applyNetworkEvents, lineRef } from "../messages/network-events";
import { DEFAULT_LINE_ID } from "../vocabulary/lines";
import { CODE_OF_STATUS, errorResponse, failureOf, methodNotAllowed, noRoute, type Failure } from "./errors";
import { authenticate, authFailure } from "./auth";
import { createClientAddress } from "./client-address";
import { CONSOLE_ASSETS_PREFIX, CONSOLE_SESSION_PATH, createConsoleRoutes, createOrigins } from "./console";
import { createMcpRoute, MCP_PATH } from "./mcp";
import { API_MEDIA_PREFIX, serveMedia, serveSignedMedia, SIGNED_MEDIA_PREFIX } from "./media";
import { buildOpenApiDocument, docsResponse } from "./openapi";
import { operationsRoutes } from "./operations";
import { restOperations, type RestOperation } from "./rest";
import { createAppRouter } from "./router";
import type { Context } from "./trpc";

/** Largest request body accepted (docs/api.md). */
export const MAX_BODY_BYTES = 1024 * 1024;
/**
 * Largest request line and headers answered (431 above, in the error envelope). Bun's own
 * parser limit, which answers an empty 431, is set above it by `bun run start`
 * (--max-http-header-size in package.json).
 */
export const MAX_HEAD_BYTES = 16 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });
/** `application/json`, any case, with or without parameters; not `application/jsonx`. */
const JSON_MEDIA_TYPE = /^application\/json[ \t]*(?:;|$)/i;

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

/** The body of a JSON route: 415 unless application/json, 413 when too large. */
function readJsonText(req: Request): Promise<string> {
  const type = req.headers.get("content-type") ?? "";
  if (!JSON_MEDIA_TYPE.test(type)) {
    const got = type ? ` (got ${type.split(";")[0]!.trim().slice(0, 100)})` : "";
    throw new AppError("UNSUPPORTED_MEDIA_TYPE", `content-type: must be application/json${got}`);
  }
  return readBody(req);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError("BAD_REQUEST", "body: malformed JSON");
  }
}

/** Bytes of the request line and headers, as they came on the wire (give or take folding). */
function headBytes(req: Request): number {
  let size = req.method.length + req.url.length + 12;
  for (const [name, value] of req.headers) size += name.length + value.length + 4;
  return size;
}

/** Procedure calls in a tRPC request: each takes a rate-limit token. */
function trpcCalls(url: URL): number {
  if (url.searchParams.get("batch") !== "1") return 1;
  return url.pathname.slice("/trpc/".length).split(/,|%2c/i).length;
}

/** A path's parameters (`{ phone }` of /api/messages/{phone}), from the routing table's one match. */
type Params = Record<string, string>;
type Handler = (req: Request, url: URL, ctx: Context, params: Params) => Promise<Response> | Response;

const NO_PARAMS: Params = Object.freeze({});
/** A row's match for a path test without parameters. */
const when = (test: (path: string) => boolean) => (path: string) => (test(path) ? NO_PARAMS : null);

/** A REST operation on HTTP: the JSON body read when it takes one (415, 413, 400 first), the procedure's output as JSON. */
function restHandler(operation: RestOperation): Handler {
  return async (req, url, ctx, params) => {
    const body = operation.takesBody ? parseJson(await readJsonText(req)) : undefined;
    const output = await operation.call({ ctx, params, body, query: url.searchParams, signal: req.signal });
    return new Response(JSON.stringify(output), { status: operation.status, headers: { "Content-Type": "application/json" } });
  };
}

/** One row of the routing table. */
interface Route {
  /** The path's parameters when this row serves the path, else null. */
  match(path: string): Params | null;
  /** HEAD is served by GET's handler; Bun sends its headers (Content-Length too) without the body. */
  methods: Partial<Record<string, Handler>>;
  /** `key`: the API key first; `trpc`: the same, its failure answered by tRPC in its own format. */
  auth?: "key" | "trpc";
  /** A console session cookie stands in for the key (src/api/auth.ts). */
  session: boolean;
  /** The Allow header of a 405. */
  allow: string;
  /** What metrics name the route by: a template (`/api/messages/{phone}`), never a raw path; a function when the path decides among a few. */
  label: string | ((path: string) => string);
}

function route(
  match: Route["match"],
  methods: Route["methods"],
  auth: Route["auth"],
  opts: { session?: boolean; label: Route["label"] },
): Route {
  const names = Object.keys(methods);
  if (methods.GET) names.push("HEAD");
  return { match, methods, auth, session: opts.session ?? false, allow: names.join(", "), label: opts.label };
}

/** The metrics label of a path no row serves. */
const UNMATCHED = "unmatched";

/** Rows for health, liveness, readiness and metrics (src/api/operations.ts): no key. */
const operationRows = (app: App, stopping: () => boolean): Route[] =>
  operationsRoutes(app, stopping).map((op) => route(when((p) => p === op.path), { GET: op.get }, undefined, { label: op.path }));

export interface HttpOptions {
  /** True once a shutdown began: GET /health/ready answers 503 from then on. */
  stopping?: () => boolean;
}

export interface HttpHandler {
  /** `peer` is the socket's remote address. */
  fetch(req: Request, peer: string): Promise<Response>;
}

/**
 * The HTTP face of the one router, one straight line: head size → the routing table,
 * matched once (404, 405; a REST row's match gives its path parameters) → one auth step,
 * its outcome in the context → the route (REST through src/api/rest.ts, tRPC at /trpc, the
 * console's sessions and pages in src/api/console.ts, and the routes without a key) →
 * every error through failureOf (src/api/errors.ts). Everything is built once here.
 */
/** Where each line's network posts: PUBLIC_URL + this + the line's id. */
const LINES_WEBHOOK_PREFIX = "/webhooks/lines/";

export function createHttpHandler(app: App, opts: HttpOptions = {}): HttpHandler {
  const router = createAppRouter(app.config.MAX_MESSAGE_LENGTH, app.config.NETWORK);
  const stopping = opts.stopping ?? (() => false);
  // A procedure's name is a bounded label; a batch of several, or a name the router lacks, is just /trpc.
  const procedures = new Set(Object.keys(router._def.procedures));
  const trpcLabel = (path: string) => {
    const name = path.slice("/trpc/".length);
    return procedures.has(name) ? `/trpc/${name}` : "/trpc";
  };
  const openApiJson = JSON.stringify(buildOpenApiDocument(router, app.config.NETWORK));
  const operations = restOperations(router);
  const origins = createOrigins(app.config);
  const consoleRoutes = createConsoleRoutes(app, origins, async (req) => parseJson(await readJsonText(req)));
  const report = (ctx: Context, failure: Failure) => reportFailure(app, ctx, failure);
  const serveMcp = createMcpRoute(app, router, { readJson: async (req) => parseJson(await readJsonText(req)), report });

  const serveTrpc: Handler = async (req, _url, ctx) => {
    // HEAD is a GET here: tRPC itself would answer it 204 without running the query.
    // Unauthenticated: refused before the body is read, as REST is (each call answers the failure in tRPC's format).
    const trpcReq =
      req.method === "POST"
        ? new Request(req.url, { method: "POST", headers: req.headers, body: ctx.authError === undefined ? await readJsonText(req) : "" })
        : req.method === "HEAD"
          ? new Request(req.url, { method: "GET", headers: req.headers })
          : req;
    const res = await fetchRequestHandler({
      endpoint: "/trpc",
      req: trpcReq,
      router,
      createContext: () => ctx,
      // The body is tRPC's (its errorFormatter maps with failureOf too); headers and log line are ours.
      onError: ({ error }) => report(ctx, failureOf(error)),
    });
    if (res.ok || res.headers.get("content-type")?.startsWith("application/json")) return res;
    // tRPC answers some protocol errors as text: every error is JSON.
    // tRPC's statuses are its codes': none is one only the edge answers.
    const code = (CODE_OF_STATUS.get(res.status) ?? "BAD_REQUEST") as ErrorCode;
    throw new AppError(code, (await res.text()).slice(0, 200) || code);
  };

  /**
   * A line's own webhook, verified by its driver with that line's credentials: `/webhooks/lines/<id>[/<subpath>]`,
   * and the environment's line at `/webhooks/<network>[/<subpath>]` as before lines. What it reports is stored on that line.
   */
  const serveLineWebhook = async (line: Line, prefix: string, req: Request, url: URL, ctx: Context) => {
    const subpath = url.pathname.slice(prefix.length + 1);
    let verified;
    try {
      verified = await line.driver.webhook!({ url, subpath, headers: req.headers, body: await readBody(req) });
    } catch (err) {
      // A wrong secret or signature is a failed authentication: counted, then 429 (src/api/auth.ts).
      throw err instanceof AppError && err.code === "UNAUTHORIZED" ? authFailure(app, ctx.ip, err) : err;
    }
    const { response, ...events } = verified;
    const applied = await applyNetworkEvents(app.storage, lineRef(line), events, app.log, { maxMessageLength: app.config.MAX_MESSAGE_LENGTH, media: app.media, metrics: app.metrics, handoff: handoffOf(app.config) });
    app.log.info("webhook", { line: line.row.name, network: line.row.network, ...applied });
    return response;
  };
  const serveLinesWebhook: Handler = (req, url, ctx) => {
    const id = url.pathname.slice(LINES_WEBHOOK_PREFIX.length).split("/")[0]!;
    const line = app.lines.all().find((l) => l.row.id === id);
    if (!line?.driver.webhook) throw new AppError("NOT_FOUND", `no line ${id} takes webhooks`);
    return serveLineWebhook(line, `${LINES_WEBHOOK_PREFIX}${id}`, req, url, ctx);
  };

  // The routing table: the first row whose path matches decides (404 when none, 405 with Allow).
  const routes: Route[] = [
    ...operationRows(app, stopping),
    route(when((p) => p === "/openapi.json"), { GET: () => new Response(openApiJson, { headers: { "Content-Type": "application/json" } }) }, undefined, { label: "/openapi.json" }),
    route(when((p) => p === "/docs" || p.startsWith("/docs/")), {
      GET: (_req, url) => docsResponse(url.pathname) ?? noRoute("GET", url.pathname),
    }, undefined, { label: "/docs" }),
    // Model Context Protocol (src/api/mcp.ts): its Origin check comes before the key, so it authenticates itself. Stateless: POST only.
    route(when((p) => p === MCP_PATH), { POST: (req, _url, ctx) => serveMcp(req, ctx) }, undefined, { label: MCP_PATH }),
    route(when((p) => p.startsWith("/trpc/")), { GET: serveTrpc, POST: serveTrpc }, "trpc", { session: true, label: trpcLabel }),
    // Media bytes are not JSON: served here, not through the router (src/api/media.ts); by
    // session too, so the console's <img src="/api/media/…"> works.
    route(when((p) => p.startsWith(API_MEDIA_PREFIX) && !p.includes("/", API_MEDIA_PREFIX.length)), { GET: (req, url) => serveMedia(app, req, url) }, "key", {
      session: true,
      label: `${API_MEDIA_PREFIX}{id}`,
    }),
    // The operator console (src/api/console.ts): its sessions, its built files, its pages.
    route(when((p) => p === CONSOLE_SESSION_PATH), { GET: consoleRoutes.session, POST: consoleRoutes.signIn, DELETE: consoleRoutes.signOut }, undefined, { label: CONSOLE_SESSION_PATH }),
    route(when((p) => p.startsWith(CONSOLE_ASSETS_PREFIX)), { GET: consoleRoutes.asset }, undefined, { label: `${CONSOLE_ASSETS_PREFIX}{file}` }),
    route(when((p) => p === "/console" || p.startsWith("/console/")), { GET: consoleRoutes.page }, undefined, { label: "/console" }),
    route(when((p) => p.startsWith(SIGNED_MEDIA_PREFIX) && !p.includes("/", SIGNED_MEDIA_PREFIX.length)), { GET: (req, url) => serveSignedMedia(app, req, url) }, undefined, {
      label: `${SIGNED_MEDIA_PREFIX}{signed}`,
    }),
  ];
  routes.push(route(when((p) => p.startsWith(LINES_WEBHOOK_PREFIX)), { POST: serveLinesWebhook }, undefined, { label: `${LINES_WEBHOOK_PREFIX}{id}` }));
  const envLine = app.lines.find(DEFAULT_LINE_ID);
  if (envLine?.driver.webhook && envLine.row.network !== "loopback") {
    const prefix = `/webhooks/${envLine.row.network}`;
    // The environment's line as it is now (its driver is rebuilt when the environment changes at a restart only).
    routes.push(route(when((p) => p === prefix || p.startsWith(`${prefix}/`)), { POST: (req, url, ctx) => serveLineWebhook(app.lines.get(DEFAULT_LINE_ID), prefix, req, url, ctx) }, undefined, { label: prefix }));
  }
  // The REST routes (src/api/rest.ts), one row per path, in the router's order.
  const restRows = new Map<string, { pattern: RegExp; methods: Route["methods"]; label: string }>();
  for (const operation of operations) {
    const row = restRows.get(operation.pattern.source) ?? { pattern: operation.pattern, methods: {}, label: operation.route };
    row.methods[operation.method] = restHandler(operation);
    restRows.set(operation.pattern.source, row);
  }
  for (const { pattern, methods, label } of restRows.values()) {
    routes.push(
      route((p) => {
        const matched = pattern.exec(p);
        return matched ? (matched.groups ?? NO_PARAMS) : null;
      }, methods, "key", { label }),
    );
  }

  return serveRoutes(app, routes, origins);
}

/**
 * A worker's listener (WORKER_PORT): the health, readiness and metrics rows alone, served by
 * the same edge as the API (404 and 405 answers, request id, metrics and log line).
 */
export function createOperationsHandler(app: App, opts: HttpOptions = {}): HttpHandler {
  return serveRoutes(app, operationRows(app, opts.stopping ?? (() => false)));
}

/** A failure's headers onto the response, and its log line. */
function reportFailure(app: App, ctx: Context, failure: Failure): void {
  Object.assign(ctx.responseHeaders, failure.headers);
  if (!failure.log) return;
  const { level, cause } = failure.log;
  const requestId = ctx.requestId;
  if (level === "warn") app.log.warn("request met an unavailable database; answered 503", { requestId, error: errorText(cause) });
  else app.log.error("request failed", { requestId, error: errorText(cause), stack: (cause as Error | undefined)?.stack });
}

/** Serves a routing table: `origins` decides the console session's own origin (rows with `session`). */
function serveRoutes(app: App, routes: Route[], origins?: ReturnType<typeof createOrigins>): HttpHandler {
  const { metrics } = app;
  const clientAddress = createClientAddress(app.config.TRUSTED_PROXIES);

  /** The first row that serves `path` (the table's order decides), with the path's parameters. */
  function matchRoute(path: string): { row: Route; params: Params } | undefined {
    for (const row of routes) {
      const params = row.match(path);
      if (params) return { row, params };
    }
    return undefined;
  }

  async function serve(req: Request, url: URL, ctx: Context, matched: ReturnType<typeof matchRoute>): Promise<Response> {
    if (headBytes(req) > MAX_HEAD_BYTES) {
      return errorResponse({ code: "REQUEST_HEADER_FIELDS_TOO_LARGE", message: `headers: request line and headers larger than ${MAX_HEAD_BYTES} bytes` });
    }
    const path = url.pathname;
    if (!matched) return noRoute(req.method, path);
    const { row, params } = matched;
    const handler = row.methods[req.method] ?? (req.method === "HEAD" ? row.methods.GET : undefined);
    if (!handler) {
      return methodNotAllowed(req.method, path, row.allow);
    }
    if (row.auth) {
      try {
        const { key, headers } = await authenticate(app, req, ctx.ip, {
          calls: row.auth === "trpc" ? trpcCalls(url) : 1,
          ...(row.session && origins ? { isOwnOrigin: (origin: string) => origins.isOwn(origin, req, url, ctx.peer) } : {}),
        });
        ctx.keyId = key.id;
        ctx.key = key;
        Object.assign(ctx.responseHeaders, headers);
      } catch (err) {
        // tRPC clients read errors in tRPC's format, a database outage's too: each procedure of the request throws it.
        if (row.auth !== "trpc") throw err;
        ctx.authError = err;
      }
    }
    return handler(req, url, ctx, params);
  }

  return {
    async fetch(req, peer) {
      const requestId = Bun.randomUUIDv7();
      const started = performance.now();
      const url = new URL(req.url);
      const ip = clientAddress(peer, req.headers.get("x-forwarded-for"));
      const ctx: Context = { app, req, ip, peer, requestId, responseHeaders: {} };
      const matched = matchRoute(url.pathname);
      const label = matched ? matched.row.label : UNMATCHED;
      const route = typeof label === "string" ? label : label(url.pathname);
      // The request's span is named by its route's template (as metrics label it), never by the raw path.
      const spanName = matched ? `${req.method} ${route}` : `HTTP ${req.method}`;
      const res = await withRequestSpan(req.headers, spanName, { "http.request.method": req.method, "http.route": matched ? route : undefined }, async () => {
        let res: Response;
        try {
          res = await serve(req, url, ctx, matched);
        } catch (err) {
          // A client that hung up is not an error: nobody gets this answer (499, as nginx logs it).
          if (req.signal.aborted) res = new Response(null, { status: 499 });
          else {
            const failure = failureOf(err);
            reportFailure(app, ctx, failure);
            res = errorResponse(failure.body);
          }
        }
        annotateSpan({ "http.response.status_code": res.status });
        return res;
      });
      const status = res.status;
      for (const [name, value] of Object.entries(ctx.responseHeaders)) if (!res.headers.has(name)) res.headers.set(name, value);
      res.headers.set("X-Request-Id", requestId);
      const ms = performance.now() - started;
      metrics?.request(req.method, route, status, ms / 1000);
      app.log.info(status === 499 ? "client closed the request" : "request", {
        requestId,
        method: req.method,
        path: url.pathname,
        status,
        ms: Math.round(ms * 10) / 10,
      });
      return res;
    },
  };
}
