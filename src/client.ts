import { createTRPCClient, httpLink } from "@trpc/client";
import type { AppRouter } from "./api/router";

export type { AppRouter } from "./api/router";

/**
 * A typed client for a Textwire server:
 *
 *   const tw = createClient({ url: "http://127.0.0.1:3000", apiKey });
 *   await tw.messages.send.mutate({ phone: "+14155550123", message: "Hi" });
 *   // With an Idempotency-Key (CONTRACT §6):
 *   await tw.messages.send.mutate(input, { context: { idempotencyKey: "order-42" } });
 */
export function createClient(opts: { url: string; apiKey: string; fetch?: typeof fetch }) {
  return createTRPCClient<AppRouter>({
    links: [
      // One request a call, so each mutation can carry its own Idempotency-Key.
      httpLink({
        url: `${opts.url.replace(/\/+$/, "")}/trpc`,
        headers: ({ op }) => {
          const key = op.context.idempotencyKey;
          return {
            Authorization: `Bearer ${opts.apiKey}`,
            ...(typeof key === "string" ? { "Idempotency-Key": key } : {}),
          };
        },
        ...(opts.fetch ? { fetch: opts.fetch } : {}),
      }),
    ],
  });
}

export type TextwireClient = ReturnType<typeof createClient>;
