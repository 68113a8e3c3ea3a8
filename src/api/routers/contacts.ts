import { z } from "zod";
import { contactInput, contactOutput, contactRecord, getContact } from "../../messages/contacts";
import { markConversationRead } from "../../messages/read-state";
import { isContactTyping, setOurTyping } from "../../messages/typing";
import { READ_ERRORS } from "../error-responses";
import { authedProcedure, documentedOnly, router } from "../trpc";

// Minimal: `typing` on contacts.get and the typing and read procedures for the console (branch console24); branch api24's full ones replace them.
const contactWithTypingOutput = z.object({ success: z.boolean(), contact: contactRecord.extend({ typing: z.boolean() }) });
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
    .output(documentedOnly(contactWithTypingOutput))
    .query(async ({ ctx, input }) => {
      const [contact, typing] = await Promise.all([getContact(ctx.app.storage, input.phone), isContactTyping(ctx.app.storage, input.phone)]);
      return { success: true, contact: { ...contact, typing } };
    }),
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
    .output(documentedOnly(contactOutput))
    .mutation(async ({ ctx, input }) => ({ success: true, contact: await markConversationRead(ctx.app, input.phone) })),
});
