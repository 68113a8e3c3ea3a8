import { useQuery } from "@tanstack/react-query";
import type { NetworkCapabilities } from "../../vocabulary/network";
import { useTRPC } from "../trpc";

/** What the server's network can do (network.get), asked once: the actions on a message follow it. Undefined until known. */
export function useCapabilities(): NetworkCapabilities | undefined {
  const trpc = useTRPC();
  return useQuery({ ...trpc.network.get.queryOptions(), staleTime: Infinity }).data?.network.capabilities;
}
