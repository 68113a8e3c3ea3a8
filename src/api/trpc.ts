import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import { z } from "zod";
import type { App } from "../app";
import { AppError } from "../errors";
import { isDatabaseUnavailable } from "../db/errors";
import { errorText } from "../log";
import { DATABASE_RETRY_AFTER, DATABASE_UNAVAILABLE, describeError } from "./errors";

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
  /** Why authentication failed, for tRPC to answer in its own format. */
  authError?: AppError;
}

/** trpc-to-openapi's meta, and the REST status of a success when it is not 200 (201 for a creation). */
export type Meta = OpenApiMeta<{ successStatus?: 201 }>;

const t = initTRPC
  .context<Context>()
  .meta<Meta>()
  .create({
    // Never stack traces in responses, whatever NODE_ENV says.
    isDev: false,
    errorFormatter({ shape, error }) {
      const { code, message, issues, ...details } = describeError(error);
      return { message, code: shape.code, data: { code, httpStatus: shape.data.httpStatus, issues, ...details } };
    },
  });

export const router = t.router;

/** An AppError of our service functions as a tRPC error, its headers kept for the response. */
function toTRPCError(ctx: Context, cause: AppError): TRPCError {
  Object.assign(ctx.responseHeaders, cause.headers);
  return new TRPCError({ code: cause.code, message: cause.message, cause });
}

/**
 * The one middleware: the caller was authenticated at the HTTP edge (src/api/auth.ts,
 * before the body is read), and AppErrors leave as tRPC errors with their status.
 */
const guarded = t.middleware(async ({ ctx, next }) => {
  const { keyId } = ctx;
  if (ctx.authError || !keyId) {
    throw toTRPCError(ctx, ctx.authError ?? new AppError("UNAUTHORIZED", "authorization: missing header", { "WWW-Authenticate": "Bearer" }));
  }
  const result = await next({ ctx: { keyId } });
  if (!result.ok && result.error.cause instanceof AppError) throw toTRPCError(ctx, result.error.cause);
  if (!result.ok && isDatabaseUnavailable(result.error.cause)) {
    ctx.app.log.warn("request met an unavailable database; answered 503", { requestId: ctx.requestId, error: errorText(result.error.cause) });
    throw toTRPCError(ctx, new AppError("SERVICE_UNAVAILABLE", DATABASE_UNAVAILABLE.message, { "Retry-After": DATABASE_RETRY_AFTER }));
  }
  return result;
});

export const authedProcedure = t.procedure.use(guarded);

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
