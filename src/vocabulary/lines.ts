/** The networks a line can be on (CONTRACT: lines); `android` is SMS Gateway for Android. */
export const LINE_NETWORKS = ["loopback", "twilio", "bluebubbles", "android"] as const;
export type LineNetwork = (typeof LINE_NETWORKS)[number];

/** Who changes a line: the API (and console, CLI), or the environment (`NETWORK` and its settings). */
export const LINE_MANAGERS = ["api", "env"] as const;
export type LineManager = (typeof LINE_MANAGERS)[number];

/** The environment's line: every message stored before lines belongs to it. */
export const DEFAULT_LINE_ID = "ln_default";
export const DEFAULT_LINE_NAME = "default";

/** A line's name: lowercase letters, digits and '-', 1 to 40. */
export const LINE_NAME = /^[a-z0-9-]{1,40}$/;

/** Why routing chose a line (src/lines/route.ts), and why a send went through the fallback instead. */
export const ROUTE_REASONS = ["requested", "reply", "sticky", "imessage", "default"] as const;
export type RouteReason = (typeof ROUTE_REASONS)[number];
export const REROUTE_REASONS = ["not_on_imessage", "unreachable"] as const;
export type RerouteReason = (typeof REROUTE_REASONS)[number];

/** A line as stored messages and chats name it: its id, and its network (what the network's own ids are unique within). */
export interface LineRef {
  id: string;
  network: string;
}
