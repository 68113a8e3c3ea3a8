import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { App } from "../app";
import { AppError } from "../errors";
import { describeError } from "./errors";

export interface Context {
  app: App;
  req: Request;
  ip: string;
  requestId: string;
  /** Headers for the response, success or error; a plain object, as trpc-to-openapi needs. */
  responseHeaders: Record<string, string>;
  /** The API key's id, once authenticated. */
  keyId?: string;
  /** Why authentication failed, for tRPC to answer in its own format. */
  authError?: AppError;
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

/** Authentication happens at the HTTP edge (src/api/auth.ts), before the body is read. */
const authenticated = t.middleware(({ ctx, next }) => {
  if (ctx.authError) throw ctx.authError;
  if (!ctx.keyId) throw new AppError("UNAUTHORIZED", "authorization: missing header, expected 'Authorization: Bearer <API_KEY>'", { "WWW-Authenticate": "Bearer" });
  return next({ ctx: { keyId: ctx.keyId } });
});

export const publicProcedure = t.procedure.use(appErrors);
export const authedProcedure = publicProcedure.use(authenticated);
