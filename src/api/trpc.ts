import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { App } from "../app";
import { AppError } from "../errors";
import { describeError } from "./errors";
import { rateLimitHeaders } from "./rate-limit";

export interface Context {
  app: App;
  req: Request;
  ip: string;
  requestId: string;
  /** Headers for the response, success or error; a plain object, as trpc-to-openapi needs. */
  responseHeaders: Record<string, string>;
}

const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    // Never stack traces in responses, whatever NODE_ENV says.
    isDev: false,
    errorFormatter({ shape, error }) {
      const { code, message, issues } = describeError(error);
      return { message, code: shape.code, data: { code, httpStatus: shape.data.httpStatus, issues } };
    },
  });

export const router = t.router;

/** Turns the AppErrors of our service functions into tRPC errors, headers included. */
const appErrors = t.middleware(async ({ ctx, next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof AppError) {
    const cause = result.error.cause;
    Object.assign(ctx.responseHeaders, cause.headers);
    throw new TRPCError({ code: cause.code, message: cause.message, cause });
  }
  return result;
});

const BEARER = /^bearer +(\S+) *$/i;

/** A valid API key, from an address that has not failed too often, within its rate limit. */
const authenticated = t.middleware(({ ctx, next }) => {
  const { app } = ctx;
  const blocked = app.authFailures.peek(ctx.ip);
  if (!blocked.allowed) {
    throw new AppError("TOO_MANY_REQUESTS", "too many failed authentication attempts from this address; try again later", {
      "Retry-After": String(blocked.retryAfterSeconds),
    });
  }
  const key = BEARER.exec(ctx.req.headers.get("authorization") ?? "")?.[1];
  const keyId = key ? app.verifyKey(key) : null;
  if (!keyId) {
    app.authFailures.take(ctx.ip);
    throw new AppError(
      "UNAUTHORIZED",
      key ? "authorization: invalid API key" : "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'",
      { "WWW-Authenticate": "Bearer" },
    );
  }
  if (app.keyLimiter) {
    const decision = app.keyLimiter.take(keyId);
    Object.assign(ctx.responseHeaders, rateLimitHeaders(decision));
    if (!decision.allowed) {
      throw new AppError("TOO_MANY_REQUESTS", `rate limit exceeded; retry in ${decision.retryAfterSeconds} s`);
    }
  }
  return next({ ctx: { keyId } });
});

export const publicProcedure = t.procedure.use(appErrors);
export const authedProcedure = publicProcedure.use(authenticated);
