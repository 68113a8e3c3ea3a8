import type { z } from "zod";

/** The error codes (docs/api.md "Errors"). Each maps to one HTTP status, in src/api/errors.ts. */
export type ErrorCode =
  | "BAD_REQUEST"
  | "UNAUTHORIZED"
  | "FORBIDDEN"
  | "NOT_FOUND"
  | "METHOD_NOT_SUPPORTED"
  | "CONFLICT"
  | "PAYLOAD_TOO_LARGE"
  | "UNSUPPORTED_MEDIA_TYPE"
  | "UNPROCESSABLE_CONTENT"
  | "TOO_MANY_REQUESTS"
  | "INTERNAL_SERVER_ERROR"
  | "BAD_GATEWAY"
  | "SERVICE_UNAVAILABLE"
  | "GATEWAY_TIMEOUT";

/**
 * Facts an error gives clients besides its code and message, the same in the REST envelope
 * (`error.reason`, …) and in a tRPC error's `data`. An idempotency conflict says which
 * (`reason`) and, when the key's first request was answered, that answer's message.
 */
export interface ErrorDetails {
  /** An idempotency conflict; or a send refused by policy (src/messages/send-policy.ts), which a workflow skips. */
  reason?: "IDEMPOTENCY_KEY_REUSED" | "IDEMPOTENCY_KEY_IN_PROGRESS" | "OPTED_OUT" | "CHAT_MUTED" | "CHAT_HUMAN";
  message_id?: string;
  timestamp?: string;
  status?: string;
  /** A 400's fields, each with what is wrong with it (given when a message names several). */
  issues?: FieldIssue[];
}

/**
 * The one error type of Textwire's own code. Service functions throw it; the API maps it
 * to a status and the error envelope, the CLI prints its message.
 */
export class AppError extends Error {
  override name = "AppError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Response headers that belong to this error (Retry-After, WWW-Authenticate). */
    readonly headers: Record<string, string> = {},
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }
}

export interface FieldIssue {
  /** The field, dotted (`context.0.role`), or `body` for the whole input. */
  path: string;
  message: string;
}

export function fieldIssues(issues: readonly { path: readonly PropertyKey[]; message: string }[]): FieldIssue[] {
  return issues.map((i) => ({ path: i.path.map(String).join(".") || "body", message: i.message }));
}

/** "phone: must be E.164, …; message: must not be empty" */
export const issuesMessage = (issues: FieldIssue[]) => issues.map((i) => `${i.path}: ${i.message}`).join("; ");

/** Parses input outside the API (CLI, workflows) with the API's schemas and messages. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    const issues = fieldIssues(result.error.issues);
    throw new AppError("BAD_REQUEST", issuesMessage(issues), {}, { issues });
  }
  return result.data;
}
