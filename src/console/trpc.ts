import { MutationCache, QueryCache, QueryClient } from "@tanstack/react-query";
import { createTRPCClient, httpBatchLink, TRPCClientError } from "@trpc/client";
import { createTRPCContext } from "@trpc/tanstack-react-query";
import type { AppRouter } from "../api/router";

/** The console calls the same typed procedures as every tRPC client (src/api/router.ts). */
export const { TRPCProvider, useTRPC, useTRPCClient } = createTRPCContext<AppRouter>();

/** Whether an error means the session is gone (expired, signed out elsewhere, key revoked). */
export function isSignedOut(error: unknown): boolean {
  return error instanceof TRPCClientError && (error.data as { httpStatus?: number } | undefined)?.httpStatus === 401;
}

/** A client that authenticates by the session cookie and sends the CSRF token with every call. */
export function createConsoleClient(csrfToken: string) {
  return createTRPCClient<AppRouter>({
    links: [httpBatchLink({ url: "/trpc", headers: () => ({ "X-CSRF-Token": csrfToken }) })],
  });
}

/** Any 401, from a query or a mutation, ends the console's session (the caches' handlers run even when a call has its own onError). */
export function createQueryClient(onSignedOut: () => void): QueryClient {
  const onError = (error: unknown) => {
    if (isSignedOut(error)) onSignedOut();
  };
  return new QueryClient({
    queryCache: new QueryCache({ onError }),
    mutationCache: new MutationCache({ onError }),
    defaultOptions: { queries: { retry: (count, error) => !isSignedOut(error) && count < 2 } },
  });
}
