import { messagesRouter } from "./routers/messages";
import { webhooksRouter } from "./routers/webhooks";
import { router } from "./trpc";

/** The one router: served to tRPC clients at /trpc and as REST by trpc-to-openapi. */
export function createAppRouter(maxMessageLength: number) {
  return router({
    messages: messagesRouter(maxMessageLength),
    webhooks: webhooksRouter(maxMessageLength),
  });
}

export type AppRouter = ReturnType<typeof createAppRouter>;
