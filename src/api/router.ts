import { chatsRouter } from "./routers/chats";
import { contactsRouter } from "./routers/contacts";
import { conversationsRouter } from "./routers/conversations";
import { keysRouter } from "./routers/keys";
import { linesRouter } from "./routers/lines";
import { messagesRouter } from "./routers/messages";
import { networkRouter } from "./routers/network";
import { systemRouter } from "./routers/system";
import { eventsRouter, webhookEndpointsRouter } from "./routers/webhook-endpoints";
import { webhooksRouter } from "./routers/webhooks";
import { workflowsRouter } from "./routers/workflows";
import { router } from "./trpc";

/** The operator console's procedures: tRPC only (no `openapi` meta), so REST and /openapi.json stay as they are. */
const consoleProcedures = {
  conversations: conversationsRouter,
  keys: keysRouter,
  workflows: workflowsRouter,
  system: systemRouter,
};

const fullRouter = (maxMessageLength: number) =>
  router({
    messages: messagesRouter(maxMessageLength),
    chats: chatsRouter(maxMessageLength),
    contacts: contactsRouter,
    network: networkRouter,
    lines: linesRouter,
    webhooks: webhooksRouter(maxMessageLength),
    webhookEndpoints: webhookEndpointsRouter,
    events: eventsRouter,
    ...consoleProcedures,
  });

export type AppRouter = ReturnType<typeof fullRouter>;

/**
 * The one router: served to tRPC clients at /trpc and as REST (src/api/rest.ts). `webhooks`
 * is the network's inbound webhook, `webhookEndpoints` the outbound ones. The loopback
 * webhook forges inbound messages, so it exists only on the loopback network (elsewhere
 * neither face nor the OpenAPI document has it; the type keeps it for clients).
 */
export function createAppRouter(maxMessageLength: number, network = "loopback"): AppRouter {
  if (network === "loopback") return fullRouter(maxMessageLength);
  return router({
    messages: messagesRouter(maxMessageLength),
    chats: chatsRouter(maxMessageLength),
    contacts: contactsRouter,
    network: networkRouter,
    lines: linesRouter,
    webhookEndpoints: webhookEndpointsRouter,
    events: eventsRouter,
    ...consoleProcedures,
  }) as unknown as AppRouter;
}
