import { useQuery, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import type { z } from "zod";
import type { AppRouter } from "../../api/router";
import type { NETWORK_FIELDS } from "../../lines/schemas";
import type { LineNetwork } from "../../vocabulary/lines";
import { useTRPC } from "../trpc";

type Outputs = inferRouterOutputs<AppRouter>["lines"];
export type Line = Outputs["list"]["lines"][number];
export type RoutePreview = Outputs["route"];

/** What the add and edit forms ask of each network; `name` is checked against the server's schema (src/lines/schemas.ts). */
type Field<N extends LineNetwork> =
  | { in: "settings"; name: keyof z.input<(typeof NETWORK_FIELDS)[N]["settings"]> & string; label: string; kind: "text" | "url" | "number"; options?: readonly string[]; required?: boolean; hint?: string }
  | { in: "credentials"; name: keyof z.input<(typeof NETWORK_FIELDS)[N]["credentials"]> & string; label: string; hint?: string };

const TIMEOUT = { in: "settings", name: "send_timeout_ms", label: "Send timeout (ms)", kind: "number", hint: "Optional; at least 1000. Empty: the environment's timeout for this network." } as const;

/** Each network's settings (shown) and credentials (write-only, password fields), as docs/lines.md lists them. */
export const NETWORK_FORMS: { [N in LineNetwork]: readonly Field<N>[] } = {
  loopback: [],
  twilio: [
    { in: "settings", name: "account_sid", label: "Account SID", kind: "text", required: true, hint: "AC followed by 32 hex digits." },
    { in: "credentials", name: "auth_token", label: "Auth token" },
    { in: "settings", name: "api_url", label: "API URL", kind: "url", hint: "Optional; empty: Twilio's." },
    TIMEOUT,
  ],
  bluebubbles: [
    { in: "settings", name: "url", label: "Server URL", kind: "url", required: true, hint: "The BlueBubbles server, e.g. http://192.168.1.20:1234" },
    { in: "credentials", name: "password", label: "Server password" },
    { in: "credentials", name: "webhook_secret", label: "Webhook secret", hint: "At least 24 letters, digits, '_' or '-'; the server's webhook carries it as ?secret=." },
    { in: "settings", name: "service", label: "Service", kind: "text", options: ["iMessage", "SMS"], hint: "Optional; SMS relays texts through the Mac's iPhone." },
    TIMEOUT,
  ],
  android: [
    { in: "settings", name: "url", label: "Gateway URL", kind: "url", required: true, hint: "SMS Gateway for Android (local or cloud server)." },
    { in: "settings", name: "username", label: "Username", kind: "text", required: true },
    { in: "credentials", name: "password", label: "Password" },
    { in: "credentials", name: "signing_key", label: "Signing key", hint: "The app's webhook signing key." },
    { in: "settings", name: "device_id", label: "Device ID", kind: "text", hint: "Optional; empty: the account's only device." },
    { in: "settings", name: "sim_number", label: "SIM number", kind: "number", hint: "Optional; 1, 2 or 3." },
    TIMEOUT,
  ],
};

/** Every line (lines.list), refreshed now and then: lines change rarely, and the Lines page refreshes it on each change. */
export function useLines(): Line[] | undefined {
  const trpc = useTRPC();
  return useQuery({ ...trpc.lines.list.queryOptions(), staleTime: 30_000 }).data?.lines;
}

/**
 * The deployment's lines when it has more than one, else undefined: the conversations show
 * lines only then, so a deployment with one line looks as it did before lines.
 */
export function useSeveralLines(): Line[] | undefined {
  const lines = useLines();
  return lines && lines.length > 1 ? lines : undefined;
}

/** Refreshes every lines query (the list, and where the composer's routing would send) after a change. */
export function useInvalidateLines() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return () => queryClient.invalidateQueries({ queryKey: trpc.lines.pathKey() });
}

/** How the composer words why routing picked a line (ROUTE_REASONS and REROUTE_REASONS, src/vocabulary/lines.ts). */
export const ROUTE_REASON_WORDS: Record<string, string> = {
  requested: "chosen",
  reply: "the line of the message answered",
  sticky: "the line of the last message with this contact",
  imessage: "the contact has iMessage",
  default: "the default line",
  not_on_imessage: "the contact is not on iMessage",
  unreachable: "the line's server cannot be reached",
};
