import { initTRPC } from "@trpc/server";
import { TRPC_ERROR_CODES_BY_KEY } from "@trpc/server/rpc";
import type { OpenApiMeta } from "trpc-to-openapi";
import { z } from "zod";
import type { App } from "../app";
import { allLinesRefusal, requireScope, type KeyAuth } from "../auth/policy";
import { AppError } from "../errors";
import type { Scope } from "../vocabulary/scopes";
import { failureOf, HTTP_STATUS } from "./errors";

export interface Context {
  app: App;
  req: Request;
  /** The client's address: the socket's peer, or from X-Forwarded-For behind TRUSTED_PROXIES. */
  ip: string;
  /** The socket's remote address (a proxy's, behind one). */
  peer: string;
  requestId: string;
  /** Headers for the response, success or error, set by the procedures and the HTTP edge. */
  responseHeaders: Record<string, string>;
  /** The API key's id, once authenticated. */
  keyId?: string;
  /** The API key's scopes and limits, once authenticated (src/auth/policy.ts). */
  key?: KeyAuth;
  /** Why authentication failed (an AppError, or the database's failure), for tRPC to answer in its own format. */
  authError?: unknown;
}

/** trpc-to-openapi's meta, and the REST status of a success when it is not 200 (201 for a creation). */
export type Meta = OpenApiMeta<{ successStatus?: 201 }>;

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // Never stack traces in responses, whatever NODE_ENV says.
    isDev: false,
    // The status and body come from the one map (src/api/errors.ts); its headers and log line are the HTTP edge's.
    errorFormatter({ shape, error }) {
      const { code, message, issues, ...details } = failureOf(error).body;
      // What a procedure throws reaches here wrapped as INTERNAL_SERVER_ERROR: its code is the one the map found.
      const rpcCode = error.code === "INTERNAL_SERVER_ERROR" ? ((TRPC_ERROR_CODES_BY_KEY as Record<string, number>)[code] ?? shape.code) : shape.code;
      return { message, code: rpcCode, data: { code, httpStatus: HTTP_STATUS[code], issues, ...details } };
    },
  });

export const router = t.router;
/** Calls the router's procedures in this process with a request's context (the MCP tools, src/api/mcp.ts). */
export const createCallerFactory = t.createCallerFactory;

/**
 * Checks that the HTTP edge authenticated the request (src/api/http.ts, before the body is
 * read, one rate-limit token per call): a failure there is thrown by each procedure, for
 * tRPC clients to read in tRPC's format.
 */
const authenticated = t.middleware(({ ctx, next, path }) => {
  if (ctx.authError !== undefined) throw ctx.authError;
  if (!ctx.key) throw new AppError("UNAUTHORIZED", "authorization: missing header", { "WWW-Authenticate": "Bearer" });
  // A key limited to some lines reaches only what names its line (src/lines): every other procedure reads or acts across lines.
  if (ctx.key.lines !== null && !LINE_AWARE.has(path)) throw allLinesRefusal(ctx.key)!;
  return next({ ctx: { keyId: ctx.key.id, key: ctx.key } });
});

/**
 * The procedures a key limited to lines may call: each checks the line it sends through or
 * reads (the send path and history and poll in src/messages/service.ts; lines lists only the key's).
 */
const LINE_AWARE = new Set(["messages.send", "messages.generate", "messages.get", "messages.history", "messages.poll", "lines.list", "lines.get", "lines.route", "system.info", "network.get",
  // Keys made by a key limited to lines are limited to them too (src/auth/policy.ts: never wider).
  "keys.create", "keys.list", "keys.revoke"]);

/** Authenticated, with no scope checked here: the procedure asks the policy itself (its scope depends on its input). */
export const authedProcedure = t.procedure.use(authenticated);

const scopedProcedures = new Map<Scope, typeof authedProcedure>();
/**
 * A procedure that needs `scope`: every call (REST, each call of a tRPC batch, MCP's tools,
 * the console, the remote worker) is refused 403 naming the scope before its input is read.
 */
export function scoped(scope: Scope): typeof authedProcedure {
  let procedure = scopedProcedures.get(scope);
  if (!procedure) {
    procedure = authedProcedure.use(({ ctx, next }) => {
      requireScope(ctx.key, scope);
      return next();
    });
    scopedProcedures.set(scope, procedure);
  }
  return procedure;
}

/**
 * An output schema for the OpenAPI document and typed clients, not checked again on
 * every response: pages of 50 to 100 records are built from typed rows by toRecord, and
 * re-validating them cost a quarter of a poll (bench/results.md). The tests check real
 * responses against the schema instead (test/unit/output-schemas.test.ts).
 */
export function documentedOnly<S extends z.ZodType>(schema: S): S {
  const identity = (value: unknown) => value;
  return Object.create(schema, {
    parse: { value: identity },
    parseAsync: { value: async (value: unknown) => value },
  }) as S;
}

/** The input of a procedure that takes none: `{}` or nothing at all. */
export const noInput = z.object({}).optional();
