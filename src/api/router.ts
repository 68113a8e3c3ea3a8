import { messagesRouter } from "./routers/messages";
import { webhooksRouter } from "./routers/webhooks";
import { router } from "./trpc";

const fullRouter = (maxMessageLength: number) =>
  router({
    messages: messagesRouter(maxMessageLength),
    webhooks: webhooksRouter(maxMessageLength),
  });

export type AppRouter = ReturnType<typeof fullRouter>;

/**
 * The one router: served to tRPC clients at /trpc and as REST (src/api/rest.ts). The
 * loopback webhook forges inbound messages, so it exists only on the loopback network
 * (elsewhere neither face nor the OpenAPI document has it; the type keeps it for clients).
 */
export function createAppRouter(maxMessageLength: number, network = "loopback"): AppRouter {
  if (network === "loopback") return fullRouter(maxMessageLength);
  return router({ messages: messagesRouter(maxMessageLength) }) as unknown as AppRouter;
}
