import { conversationsInput, conversationsOutput, listConversations } from "../../messages/conversations";
import { lineFilter } from "../../messages/service";
import { scoped, documentedOnly, router } from "../trpc";

/** The console's conversation list (tRPC only: no REST route, docs/api.md "tRPC"). */
export const conversationsRouter = router({
  list: scoped("messages:read")
    .input(conversationsInput)
    .output(documentedOnly(conversationsOutput))
    .query(async ({ ctx, input }) => ({ conversations: await listConversations(ctx.app.storage.messages, { ...input, line: lineFilter(ctx.app.lines, input.line) }) })),
});
