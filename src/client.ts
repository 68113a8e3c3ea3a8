import { createTRPCClient, httpLink, type TRPCLink } from "@trpc/client";
import { observable } from "@trpc/server/observable";
import type { AppRouter } from "./api/router";

export type { AppRouter } from "./api/router";

/** Filled in after a call made with `{ context: { response: info } }`. */
export interface ResponseInfo {
  /** The server answered from an earlier request with the same Idempotency-Key (`Idempotent-Replayed: true`). */
  replayed?: boolean;
}

/** Copies what the HTTP response says about the call into `op.context.response`, when the caller passed one. */
const responseInfoLink: TRPCLink<AppRouter> = () => ({ op, next }) =>
  observable((observer) =>
    next(op).subscribe({
      next(value) {
        const info = op.context.response as ResponseInfo | undefined;
        const response = (value.context as { response?: Response } | undefined)?.response;
        if (info && response) info.replayed = response.headers.get("idempotent-replayed") === "true";
        observer.next(value);
      },
      error: (err) => observer.error(err),
      complete: () => observer.complete(),
    }),
  );

/**
 * A typed client for a Textwire server:
 *
 *   const tw = createClient({ url: "http://127.0.0.1:3000", apiKey });
 *   await tw.messages.send.mutate({ phone: "+14155550123", message: "Hi" });
 *   // Into a chat (a group's id from tw.chats.list.query({ kind: "group" })):
 *   await tw.messages.send.mutate({ chat_id: "grp_…", message: "Hi all" });
 *   // With an Idempotency-Key (docs/api.md), and whether the answer was a replay:
 *   const response: ResponseInfo = {};
 *   await tw.messages.send.mutate(input, { context: { idempotencyKey: "order-42", response } });
 *   response.replayed; // true when the server answered from the first request with that key
 */
export function createClient(opts: { url: string; apiKey: string; fetch?: typeof fetch }) {
  return createTRPCClient<AppRouter>({
    links: [
      responseInfoLink,
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
