import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { App } from "../app";
import { AppError } from "../errors";
import { createToolServer, createToolSet, type TextwireApi } from "../mcp/tools";
import { authenticate, takeRateLimit } from "./auth";
import { failureOf, HTTP_STATUS, type Failure } from "./errors";
import type { AppRouter } from "./router";
import { createCallerFactory, type Context } from "./trpc";

export const MCP_PATH = "/mcp";

/** What the MCP route takes from the HTTP edge (src/api/http.ts). */
export interface McpEdge {
  /** The JSON body: 415, 413 and 400 as every JSON route answers them. */
  readJson(req: Request): Promise<unknown>;
  /** A failure's headers onto the response, and its log line. */
  report(ctx: Context, failure: Failure): void;
}

/** The JSON-RPC method of one message of a body (a batch is an array). */
const methodOf = (message: unknown) => (typeof message === "object" && message !== null ? (message as { method?: unknown }).method : undefined);

/**
 * The API in this process for one MCP request: the router's caller with the request's
 * context, so every tool call is a REST call but for HTTP. Each call takes a rate-limit
 * token, as each procedure call of a tRPC batch does; a refused one is the tool's result.
 */
function callerApi(app: App, createCaller: (ctx: Context, opts: { signal: AbortSignal }) => ReturnType<AppRouter["createCaller"]>, ctx: Context & { keyId: string }): TextwireApi {
  const caller = (idempotencyKey?: string) => {
    Object.assign(ctx.responseHeaders, takeRateLimit(app, ctx.keyId, 1));
    // A request of its own: only a tool's idempotency_key, never a header of the MCP request, keys a send.
    const req = new Request(ctx.req.url, { headers: idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey } });
    return createCaller({ ...ctx, req }, { signal: ctx.req.signal });
  };
  return {
    send: (input, key) => caller(key).messages.send(input),
    message: (input) => caller().messages.get(input),
    history: (input) => caller().messages.history(input),
    poll: (input) => caller().messages.poll(input),
    conversations: (input) => caller().conversations.list(input),
    generate: (input) => caller().messages.generate(input),
    contact: (input) => caller().contacts.get(input),
    react: (input) => caller().messages.react(input),
    cancel: (input) => caller().messages.cancel(input),
    lines: () => caller().lines.list(),
  };
}

/**
 * A body that cannot be read, answered as the SDK answers its own (JSON-RPC, `id: null`):
 * broken JSON is -32700, a body too large or not JSON -32000; the HTTP status is the edge's.
 */
function jsonRpcFailure(ctx: Context, edge: McpEdge, failure: Failure): Response {
  edge.report(ctx, failure);
  const status = HTTP_STATUS[failure.body.code];
  const error = status === 400 ? { code: -32700, message: `Parse error: ${failure.body.message}` } : { code: -32000, message: failure.body.message };
  return Response.json({ jsonrpc: "2.0", error, id: null }, { status });
}

/**
 * POST /mcp (docs/mcp.md): the Model Context Protocol over Streamable HTTP, stateless (a
 * server and transport per request, JSON answers, no session). In order: a browser Origin
 * not in MCP_ALLOWED_ORIGINS is 403 (DNS rebinding); the API key as for every route (401
 * with WWW-Authenticate, the failed-authentication limit); the body; then one rate-limit
 * token per JSON-RPC message, a tool call's taken when it calls the API.
 */
export function createMcpRoute(app: App, router: AppRouter, edge: McpEdge): (req: Request, ctx: Context) => Promise<Response> {
  const tools = createToolSet(app.config.MAX_MESSAGE_LENGTH);
  const createCaller = createCallerFactory(router);
  const allowedOrigins = new Set(app.config.MCP_ALLOWED_ORIGINS);
  return async (req, ctx) => {
    const origin = req.headers.get("origin");
    if (origin !== null && !allowedOrigins.has(origin)) {
      throw new AppError("FORBIDDEN", `origin: ${origin.slice(0, 200)} is not allowed to call ${MCP_PATH}; list it in MCP_ALLOWED_ORIGINS`);
    }
    const { key, headers } = await authenticate(app, req, ctx.ip, { calls: 0 });
    const keyId = key.id;
    Object.assign(ctx.responseHeaders, headers);
    const authed = Object.assign(ctx, { keyId, key });
    let body: unknown;
    try {
      body = await edge.readJson(req);
    } catch (err) {
      return jsonRpcFailure(ctx, edge, failureOf(err));
    }
    const others = (Array.isArray(body) ? body : [body]).filter((message) => methodOf(message) !== "tools/call").length;
    if (others > 0) Object.assign(ctx.responseHeaders, takeRateLimit(app, keyId, others));
    const server = createToolServer(callerApi(app, createCaller, authed), tools, (failure) => edge.report(ctx, failure), key);
    const transport = new WebStandardStreamableHTTPServerTransport({ enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(req, { parsedBody: body });
    } finally {
      await server.close();
    }
  };
}
