import { useQuery } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../api/router";
import { useTRPC } from "./trpc";

export type Scope = inferRouterOutputs<AppRouter>["system"]["info"]["scopes"][number];

/** The session key's scopes, asked once per session (a key's scopes never change). */
function useScopeQuery() {
  const trpc = useTRPC();
  return useQuery({ ...trpc.system.info.queryOptions(), staleTime: Infinity });
}

/**
 * Whether the session's key holds a scope (docs/security.md): the pages hide what it may
 * not do (the server refuses it anyway). Nothing is shown as allowed until the server says.
 */
export function useMay(): (scope: Scope) => boolean {
  const info = useScopeQuery();
  return (scope) => info.data?.scopes.includes(scope) ?? false;
}

/**
 * Whether the server has said which scopes the key holds yet, and why not when it failed.
 * The routes wait for it: before, every scoped page would look forbidden, and a reload or
 * a link to /console/keys would be sent to the conversations.
 */
export function useScopesKnown(): { known: boolean; error: unknown } {
  const info = useScopeQuery();
  return { known: info.data !== undefined, error: info.error };
}
