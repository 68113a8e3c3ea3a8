import type { TRPCError } from "@trpc/server";
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
  TOO_MANY_REQUESTS: 429,
  REQUEST_HEADER_FIELDS_TOO_LARGE: 431,
  INTERNAL_SERVER_ERROR: 500,
  BAD_GATEWAY: 502,
  SERVICE_UNAVAILABLE: 503,
  GATEWAY_TIMEOUT: 504,
};

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

/** A request that met an unreachable or busy database: retry, nothing is wrong with it. */
export const DATABASE_UNAVAILABLE: ErrorBody = { code: "SERVICE_UNAVAILABLE", message: "database: unavailable or busy; retry later" };
/** How long a client should wait before retrying after DATABASE_UNAVAILABLE, in seconds. */
export const DATABASE_RETRY_AFTER = "1";

/** What a client is told about an error: its code, a message naming the field, never internals. */
export function describeError(error: TRPCError): ErrorBody {
  const issues = error.code === "BAD_REQUEST" ? zodIssues(error.cause) : null;
  if (issues) {
    const list = fieldIssues(issues);
    return { code: "BAD_REQUEST", message: issuesMessage(list), issues: list };
  }
  if (error.code === "PARSE_ERROR") return { code: "BAD_REQUEST", message: "body: malformed JSON" };
  const code = error.code in HTTP_STATUS ? (error.code as ErrorCode) : "INTERNAL_SERVER_ERROR";
  if (code === "INTERNAL_SERVER_ERROR" && isDatabaseUnavailable(error.cause)) return DATABASE_UNAVAILABLE;
  if (code === "INTERNAL_SERVER_ERROR") return { code, message: "internal error; the request may be retried later" };
  return { code, message: error.message, ...(error.cause instanceof AppError ? error.cause.details : {}) };
}

const DETAIL_FIELDS = ["reason", "message_id", "timestamp", "status"] as const;

/** The ErrorDetails fields of a parsed error object (a tRPC error's `data`). */
export function errorDetails(data: Record<string, unknown>): ErrorDetails {
  const details: Record<string, string> = {};
  for (const name of DETAIL_FIELDS) if (typeof data[name] === "string") details[name] = data[name];
  return details as ErrorDetails;
}

/** The error envelope (docs/api.md "Errors"). */
export function errorResponse(body: ErrorBody, headers: Record<string, string> = {}): Response {
  return Response.json({ success: false, error: body }, { status: HTTP_STATUS[body.code], headers });
}
