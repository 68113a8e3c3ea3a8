import { useQuery } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "../api/router";
import { useTRPC } from "./trpc";

export type Scope = inferRouterOutputs<AppRouter>["system"]["info"]["scopes"][number];

/**
 * Whether the session's key holds a scope (docs/security.md): the pages hide what it may
 * not do (the server refuses it anyway). Nothing is shown as allowed until the server says.
 */
export function useMay(): (scope: Scope) => boolean {
  const trpc = useTRPC();
  const info = useQuery({ ...trpc.system.info.queryOptions(), staleTime: Infinity });
  return (scope) => info.data?.scopes.includes(scope) ?? false;
}
