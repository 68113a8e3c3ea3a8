import { TRPCError } from "@trpc/server";
import { isDatabaseUnavailable } from "../db/errors";
import { AppError, fieldIssues, issuesMessage, type ErrorCode, type ErrorDetails, type FieldIssue } from "../errors";

/** Codes only the HTTP edge answers with (no procedure throws them). */
type EdgeCode = "REQUEST_HEADER_FIELDS_TOO_LARGE" | "RANGE_NOT_SATISFIABLE";

/** The one map from error codes to HTTP statuses. */
export const HTTP_STATUS: Record<ErrorCode | EdgeCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_SUPPORTED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RANGE_NOT_SATISFIABLE: 416,
  UNPROCESSABLE_CONTENT: 422,
  TOO_MANY_REQUESTS: 429,
  REQUEST_HEADER_FIELDS_TOO_LARGE: 431,
  INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
};

/** The code of each status HTTP_STATUS maps to (one code a status). */
export const CODE_OF_STATUS = new Map(Object.entries(HTTP_STATUS).map(([code, status]) => [status, code as ErrorCode | EdgeCode]));

export interface ErrorBody extends ErrorDetails {
  code: ErrorCode | EdgeCode;
  message: string;
  issues?: FieldIssue[];
  /** The stored message an error is about (504 GATEWAY_TIMEOUT: the status will follow). */
  message_id?: string;
}

interface ZodLikeIssue {
  path: PropertyKey[];
  message: string;
}

function zodIssues(cause: unknown): ZodLikeIssue[] | null {
  const issues = (cause as { issues?: unknown } | undefined)?.issues;
  return Array.isArray(issues) ? (issues as ZodLikeIssue[]) : null;
}

/** A 400's one issue from its message, "field: what is wrong" (`body` when it names no field): every 400 lists its issues. */
function issueOf(message: string): FieldIssue {
  const named = /^([A-Za-z_][\w.-]*): ([\s\S]+)$/.exec(message);
  return named ? { path: named[1]!, message: named[2]! } : { path: "body", message };
}

/** A request that met an unreachable or busy database: retry, nothing is wrong with it. */
const DATABASE_UNAVAILABLE = "database: unavailable or busy; retry later";
/** How long a client should wait before retrying after a database that was unavailable, in seconds. */
const DATABASE_RETRY_AFTER = "1";

/** What a client is told about a failure, and what the server logs of it. */
export interface Failure {
  body: ErrorBody;
  /** Headers of the response: the AppError's (Retry-After, WWW-Authenticate), Retry-After for a database unavailable. */
  headers: Record<string, string>;
  /** Logged with the request's id: `error` for an unexpected failure, `warn` for a database unavailable. */
  log?: { level: "error" | "warn"; cause: unknown };
}

/**
 * The one map from anything a request throws (an AppError, a tRPC error wrapping one or
 * zod's issues, a database error, anything else) to the envelope's body and headers, for
 * REST, tRPC and the HTTP edge alike. Never internals: an unexpected failure says only that.
 */
export function failureOf(err: unknown): Failure {
  const cause = err instanceof TRPCError && err.cause ? err.cause : err;
  if (cause instanceof AppError) {
    const body: ErrorBody = { code: cause.code, message: cause.message, ...cause.details };
    if (body.code === "BAD_REQUEST") body.issues ??= [issueOf(body.message)];
    return { body, headers: cause.headers };
  }
  if (err instanceof TRPCError) {
    const issues = err.code === "BAD_REQUEST" ? zodIssues(err.cause) : null;
    if (issues) {
      const list = fieldIssues(issues);
      return { body: { code: "BAD_REQUEST", message: issuesMessage(list), issues: list }, headers: {} };
    }
    if (err.code === "PARSE_ERROR") return { body: { code: "BAD_REQUEST", message: "body: malformed JSON", issues: [{ path: "body", message: "malformed JSON" }] }, headers: {} };
    if (err.code === "BAD_REQUEST") return { body: { code: "BAD_REQUEST", message: err.message, issues: [issueOf(err.message)] }, headers: {} };
    if (err.code !== "INTERNAL_SERVER_ERROR" && err.code in HTTP_STATUS) return { body: { code: err.code as ErrorCode, message: err.message }, headers: {} };
  }
  if (isDatabaseUnavailable(cause)) {
    return { body: { code: "SERVICE_UNAVAILABLE", message: DATABASE_UNAVAILABLE }, headers: { "Retry-After": DATABASE_RETRY_AFTER }, log: { level: "warn", cause } };
  }
  return { body: { code: "INTERNAL_SERVER_ERROR", message: "internal error; the request may be retried later" }, headers: {}, log: { level: "error", cause } };
}

/** The error envelope (docs/api.md "Errors"). */
export function errorResponse(body: ErrorBody, headers: Record<string, string> = {}): Response {
  return Response.json({ success: false, error: body }, { status: HTTP_STATUS[body.code], headers });
}

/** The answer to a path no route serves (404). */
export const noRoute = (method: string, path: string) => errorResponse({ code: "NOT_FOUND", message: `no route ${method} ${path}` });

/** The answer to a method a path's route does not take (405), `allow` its Allow header. */
export const methodNotAllowed = (method: string, path: string, allow: string) =>
  errorResponse({ code: "METHOD_NOT_SUPPORTED", message: `method ${method} not allowed on ${path}; use ${allow}` }, { Allow: allow });
