import { contactInput, contactOutput, getContact, typingOutput } from "../../messages/contacts";
import { markConversationRead } from "../../messages/read-state";
import { setOurTyping } from "../../messages/typing";
import { READ_ERRORS } from "../error-responses";
import { scoped, documentedOnly, router } from "../trpc";

const tags = ["contacts"];
const errors = { ...READ_ERRORS, 400: "`phone` is not E.164." };
const TYPING_ERRORS = {
  ...errors,
  422: "The network cannot show typing (GET /api/network): `typing: the <network> network cannot show typing`, or cannot now (BlueBubbles with its Private API off); nothing changed.",
  502: "The network failed; nothing changed.",
};

/** Contacts: whether one opted out (docs/api.md "Opt-outs"), their unread messages and typing; ours to them. */
export const contactsRouter = router({
  get: scoped("messages:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/contacts/{phone}",
        tags,
        summary: "A contact's opt-out state, unread count and typing",
        description:
          "Whether the contact opted out by replying STOP (or another opt-out word), and when; sends to an opted-out contact are refused with 403 until it replies START. How many of their messages are unread, and whether they are typing now. A phone never seen is not opted out, has none unread and is not typing.",
        protect: true,
        errorResponses: errors,
      },
    })
    .input(contactInput)
    .output(documentedOnly(contactOutput))
    .query(async ({ ctx, input }) => ({ success: true, contact: await getContact(ctx.app.storage, input.phone) })),

  startTyping: scoped("messages:send")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/contacts/{phone}/typing",
        tags,
        summary: "Show our typing indicator to the contact",
        description: "Starts it on the network. It stops with DELETE, when a message is sent to the contact, and by itself after 60 s: it never outlives our reply. No body.",
        protect: true,
        errorResponses: TYPING_ERRORS,
      },
    })
    .input(contactInput)
    .output(typingOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, ...(await setOurTyping(ctx.app, input.phone, true)) })),

  stopTyping: scoped("messages:send")
    .meta({
      openapi: {
        method: "DELETE",
        path: "/api/contacts/{phone}/typing",
        tags,
        summary: "Stop our typing indicator",
        description: "Stops it on the network (stopping one that is not on is fine).",
        protect: true,
        errorResponses: TYPING_ERRORS,
      },
    })
    .input(contactInput)
    .output(typingOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, ...(await setOurTyping(ctx.app, input.phone, false)) })),

  markRead: scoped("messages:send")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/contacts/{phone}/read",
        tags,
        summary: "Mark the conversation read",
        description:
          "Every inbound message of the contact gets `read_at`, and `unread` is 0. A network with read receipts is told first (the contact sees it read); on the others Textwire alone keeps it. No body.",
        protect: true,
        successDescription: "The contact, `unread` 0.",
        errorResponses: {
          ...errors,
          422: "The network has read receipts but cannot send them now (BlueBubbles with its Private API off); nothing changed.",
          502: "The network failed; nothing changed.",
        },
      },
    })
    .input(contactInput)
    .output(documentedOnly(contactOutput))
    .mutation(async ({ ctx, input }) => ({ success: true, contact: await markConversationRead(ctx.app, input.phone) })),
});
