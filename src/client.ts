import { createTRPCClient, httpBatchLink } from "@trpc/client";
import type { AppRouter } from "./api/router";

export type { AppRouter } from "./api/router";

/**
 * A typed client for a Textwire server:
 *
 *   const tw = createClient({ url: "http://127.0.0.1:3000", apiKey });
 *   await tw.messages.send.mutate({ phone: "+14155550123", message: "Hi" });
 */
export function createClient(opts: { url: string; apiKey: string; fetch?: typeof fetch }) {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${opts.url.replace(/\/+$/, "")}/trpc`,
        headers: { Authorization: `Bearer ${opts.apiKey}` },
        ...(opts.fetch ? { fetch: opts.fetch } : {}),
      }),
    ],
  });
}

export type TextwireClient = ReturnType<typeof createClient>;
