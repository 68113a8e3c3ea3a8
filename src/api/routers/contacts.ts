import { z } from "zod";
import { contactInput, contactOutput, getContact } from "../../messages/contacts";
import { markConversationRead } from "../../messages/read-state";
import { setOurTyping } from "../../messages/typing";
import { READ_ERRORS } from "../error-responses";
import { authedProcedure, documentedOnly, router } from "../trpc";

const typingOutput = z.object({ success: z.boolean(), typing: z.boolean() });

/** Contacts: whether one opted out (docs/api.md "Opt-outs"). */
export const contactsRouter = router({
  get: authedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/api/contacts/{phone}",
        tags: ["contacts"],
        summary: "A contact's opt-out state",
        description:
          "Whether the contact opted out by replying STOP (or another opt-out word), and when. Sends to an opted-out contact are refused with 403 until it replies START. A phone never seen is not opted out.",
        protect: true,
        errorResponses: { ...READ_ERRORS, 400: "`phone` is not E.164." },
      },
    })
    .input(contactInput)
    .output(documentedOnly(contactOutput))
    .query(async ({ ctx, input }) => ({ success: true, contact: await getContact(ctx.app.storage, input.phone) })),

  startTyping: authedProcedure
    .input(contactInput)
    .output(typingOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, ...(await setOurTyping(ctx.app, input.phone, true)) })),

  stopTyping: authedProcedure
    .input(contactInput)
    .output(typingOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, ...(await setOurTyping(ctx.app, input.phone, false)) })),

  markRead: authedProcedure
    .input(contactInput)
    .output(contactOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, contact: await markConversationRead(ctx.app, input.phone) })),
});
