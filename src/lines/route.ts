import { AppError } from "../errors";
import type { RerouteReason, RouteReason } from "../vocabulary/lines";

/** What routing knows of a line. */
export interface RouteLine {
  id: string;
  name: string;
  enabled: boolean;
  isDefault: boolean;
  /** An iMessage line (BlueBubbles, not relaying SMS): it can say whether a phone has iMessage. */
  imessage: boolean;
  fallback: string | null;
}

/** A send's facts that decide its line. */
export interface RouteRequest {
  /** `line` of the request: an id or a name. */
  line?: string | undefined;
  /** A reply (`reply_to`, a group's `chat_id`, `ctx.reply`): the line of what it answers. */
  replyLine?: string | undefined;
  /** The line of the last message exchanged with the phone (its direct chat's), when any. */
  stickyLine?: string | undefined;
  /** Whether the phone has iMessage, as remembered or asked (rule 4); undefined: not known (yet). */
  imessage?: boolean | undefined;
}

export type Route =
  | { line: RouteLine; reason: RouteReason }
  /** Rule 4 needs to know whether the phone has iMessage: ask `line`, then route again with the answer (`imessage`; an error is "unknown", false). */
  | { ask: RouteLine };

const usable = (line: RouteLine | undefined) => (line?.enabled ? line : undefined);

/**
 * Which line a send takes, first match wins (docs/lines.md):
 * 1. `line` of the request: unknown 400, disabled 409;
 * 2. a reply: the line of what it answers (disabled: 409, as the conversation lives there);
 * 3. sticky: the line of the last message with the phone, while it is enabled;
 * 4. a phone with no history: an enabled iMessage line when the phone has iMessage, otherwise the default line.
 */
export function routeSend(request: RouteRequest, lines: readonly RouteLine[]): Route {
  const byRef = (ref: string) => lines.find((l) => l.id === ref) ?? lines.find((l) => l.name === ref);
  if (request.line !== undefined) {
    const named = byRef(request.line);
    if (!named) throw new AppError("BAD_REQUEST", `line: no line ${JSON.stringify(request.line)} (GET /api/lines lists them)`);
    if (!named.enabled) throw new AppError("CONFLICT", `line: the line ${named.name} is disabled`);
    return { line: named, reason: "requested" };
  }
  if (request.replyLine !== undefined) {
    const answered = byRef(request.replyLine);
    if (!answered?.enabled) throw new AppError("CONFLICT", `line: the conversation is on the line ${answered?.name ?? request.replyLine}, which is ${answered ? "disabled" : "deleted"}`);
    return { line: answered, reason: "reply" };
  }
  const sticky = usable(request.stickyLine === undefined ? undefined : byRef(request.stickyLine));
  if (sticky) return { line: sticky, reason: "sticky" };
  const defaultLine = lines.find((l) => l.isDefault);
  const imessage = usable(defaultLine?.imessage ? defaultLine : undefined) ?? lines.find((l) => l.enabled && l.imessage);
  if (imessage && request.imessage === undefined) return { ask: imessage };
  if (imessage && request.imessage) return { line: imessage, reason: "imessage" };
  if (!defaultLine?.enabled) throw new AppError("CONFLICT", `line: the default line${defaultLine ? ` ${defaultLine.name}` : ""} is disabled; name a line or mark another one default`);
  return { line: defaultLine, reason: "default" };
}

/**
 * The line a send goes through instead, when `line` cannot reach the contact for `reason`:
 * its fallback when set, enabled and another line; else none (the send stays on `line`).
 */
export function fallbackOf(line: RouteLine, lines: readonly RouteLine[], _reason: RerouteReason): RouteLine | undefined {
  if (line.fallback === null || line.fallback === line.id) return undefined;
  return usable(lines.find((l) => l.id === line.fallback));
}
