import type { Storage } from "../db/port";
import type { RerouteReason, RouteReason } from "../vocabulary/lines";
import { isImessageLine, type Line, type LineRegistry } from "./registry";
import { fallbackOf, routeSend, type RouteLine, type RouteRequest } from "./route";

/** An iMessage answer is remembered this long per phone. */
export const IMESSAGE_MEMORY_MS = 7 * 24 * 60 * 60_000;

export interface LineDeps {
  lines: LineRegistry;
  storage: Pick<Storage, "lines">;
}

/** A line as routing reads it; the default is the registry's. */
function routeLines(lines: LineRegistry): RouteLine[] {
  const fallbackDefault = lines.default();
  return lines.all().map((l) => ({
    id: l.row.id,
    name: l.row.name,
    enabled: l.row.enabled,
    isDefault: l === fallbackDefault,
    imessage: isImessageLine(l),
    fallback: l.row.fallback,
  }));
}

/**
 * Whether `phone` has iMessage: remembered (7 days), or asked of `line`'s server and
 * remembered; undefined when the server cannot say (Private API off, an error), which is
 * not remembered.
 */
export async function hasImessage(deps: LineDeps, line: Line, phone: string): Promise<boolean | undefined> {
  const known = await deps.storage.lines.imessage(phone, IMESSAGE_MEMORY_MS);
  if (known !== undefined) return known;
  const answer = await line.driver.imessageAvailable?.(phone);
  if (answer !== undefined) await deps.storage.lines.rememberImessage(phone, answer);
  return answer;
}

export interface ChosenLine {
  line: Line;
  reason: RouteReason;
  /** Set when the send goes through `line` because `from`, which routing chose, cannot reach the phone. */
  rerouted?: { from: Line; reason: RerouteReason };
}

/**
 * The line a send takes (src/lines/route.ts, with the facts it asks for), and before it is
 * stored, its fallback instead when the line is an iMessage line and the phone is known not
 * to have iMessage. `phone` is absent for a group (its line is the chat's).
 */
export async function chooseLine(deps: LineDeps, request: Omit<RouteRequest, "imessage">, phone?: string): Promise<ChosenLine> {
  const all = deps.lines.all();
  // One line and nothing asked: nothing to decide (most deployments).
  if (all.length === 1 && request.line === undefined && request.replyLine === undefined && all[0]!.row.enabled) return { line: all[0]!, reason: "default" };
  const lines = routeLines(deps.lines);
  let route = routeSend(request, lines);
  if ("ask" in route) {
    const answer = phone ? await hasImessage(deps, deps.lines.get(route.ask.id), phone) : undefined;
    route = routeSend({ ...request, imessage: answer ?? false }, lines);
    if ("ask" in route) throw new Error("routing asked twice");
  }
  const line = deps.lines.get(route.line.id);
  const fallback = phone && isImessageLine(line) ? fallbackOf(route.line, lines, "not_on_imessage") : undefined;
  if (fallback && route.reason !== "imessage" && (await hasImessage(deps, line, phone!)) === false) {
    return { line: deps.lines.get(fallback.id), reason: route.reason, rerouted: { from: line, reason: "not_on_imessage" } };
  }
  return { line, reason: route.reason };
}

/** The line a send that `line` could not take goes through instead (a refused connection), or undefined. */
export function fallbackLine(lines: LineRegistry, line: Line): Line | undefined {
  const found = fallbackOf({ id: line.row.id, name: line.row.name, enabled: line.row.enabled, isDefault: false, imessage: isImessageLine(line), fallback: line.row.fallback }, routeLines(lines), "unreachable");
  return found && lines.get(found.id);
}
