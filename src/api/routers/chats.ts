import {
  chatInput,
  chatMessagesInput,
  chatOutput,
  chatsInput,
  chatsOutput,
  createChatInput,
  createChatOutput,
  participantInPathInput,
  participantInput,
  updateChatInput,
} from "../../messages/chat-schemas";
import { chatRecordById, listChatMessages, listChats } from "../../messages/chats";
import { setChatMode } from "../../messages/modes";
import { typingOutput } from "../../messages/contacts";
import { createGroup, markChatRead, renameGroup, setChatTyping, setGroupParticipant } from "../../messages/groups";
import { historyOutput } from "../../messages/schemas";
import { BODY_ERRORS, READ_ERRORS } from "../error-responses";
import { idempotencyKeyHeader, idempotentMutation } from "../idempotency";
import { requireWrite } from "../../auth/policy";
import { scoped, documentedOnly, router } from "../trpc";
import { SEND_LOCK_MS } from "./messages";

const tags = ["chats"];
const NOT_FOUND = { 404: "No chat with this id." };
const BAD_ID = "`id` is not a chat id";
/** What every change of a group on the network answers besides its input errors. */
const GROUP_CHANGE = {
  ...NOT_FOUND,
  409: "The chat is a direct chat (only groups have a name and participants), or its creation never reached the network.",
  422: "The network cannot do group chats (GET /api/network: Twilio), or cannot now (BlueBubbles with its Private API off); nothing changed.",
  502: "The network failed; nothing changed.",
};
const TYPING = {
  ...READ_ERRORS,
  ...NOT_FOUND,
  400: `${BAD_ID}.`,
  409: "The group's creation never reached the network.",
  422: "The network cannot show typing (GET /api/network), or cannot now; nothing changed.",
  502: "The network failed; nothing changed.",
};

/** Chats (docs/api.md "Chats"): every conversation, a contact's direct chat or a group. */
export const chatsRouter = (maxMessageLength: number) =>
  router({
    create: scoped("messages:send")
      .meta({
        successStatus: 201,
        openapi: {
          method: "POST",
          path: "/api/chats",
          tags,
          summary: "Create a group chat by sending its first message",
          description:
            "Stores the group and its first message, then asks the network to create the group with it (BlueBubbles: chat/new with every address, through its Private API). The message then follows the usual statuses; send more with POST /api/send and `chat_id`. With an Idempotency-Key a retry of a success answers it again without creating another group.",
          protect: true,
          requestHeaders: idempotencyKeyHeader,
          successDescription: "Created: the chat and its first message.",
          errorResponses: {
            ...BODY_ERRORS,
            400: "Invalid input naming the field: `participants` not 2 to 32 distinct E.164 numbers, `name` empty or too long, `message` invalid; or the network refused the recipients (the message stays failed).",
            409: "The Idempotency-Key belongs to a request still in progress, or was used with another body.",
            422: "The network cannot do group chats (GET /api/network: Twilio), or cannot now (BlueBubbles with its Private API off); nothing was stored.",
            502: "The network failed; the message stays in the chat as failed with its error.",
            504: "The network did not answer in time: the group and message may still be created; `error.message_id` names the message. Look for it (GET /api/chats) before creating the group again: the Idempotency-Key is freed.",
          },
        },
      })
      .input(createChatInput(maxMessageLength))
      .output(createChatOutput)
      .mutation(async ({ ctx, input }) => {
        await requireWrite(ctx.key, input.participants, ctx.app.storage.messages);
        return idempotentMutation(ctx, "chats.create", input, SEND_LOCK_MS, () => createGroup(ctx.app, input));
      }),

    list: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/chats",
          tags,
          summary: "Chats, latest activity first",
          description: "Every conversation: each contact's direct chat and each group chat, the one with the newest message first; `total` counts them all.",
          protect: true,
          errorResponses: { ...READ_ERRORS, 400: "`kind` is not direct or group, `limit` not a whole number of at least 1, or `offset` not one of at least 0." },
        },
      })
      .input(chatsInput)
      .output(documentedOnly(chatsOutput))
      .query(({ ctx, input }) => listChats(ctx.app.storage, input)),

    messages: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/chats/{id}/messages",
          tags,
          summary: "A chat's messages, newest first",
          description:
            "As GET /api/messages/{phone}, for any chat: a direct chat's are its contact's history; a group's carry each inbound message's sender in `phone` (null on ours).",
          protect: true,
          errorResponses: { ...READ_ERRORS, ...NOT_FOUND, 400: `${BAD_ID}, \`limit\` not a whole number of at least 1, or \`offset\` not one of at least 0.` },
        },
      })
      .input(chatMessagesInput)
      .output(documentedOnly(historyOutput))
      .query(({ ctx, input }) => listChatMessages(ctx.app.storage, input)),

    update: scoped("messages:send")
      .meta({
        openapi: {
          method: "PATCH",
          path: "/api/chats/{id}",
          tags,
          summary: "Change a chat: its mode, a group's name",
          description:
            "`mode` (any chat): `auto`, `supervised` or `human` (docs/supervision.md), event `chat.mode_changed { chat, from, to, by }`; a `human` chat set back by hand returns at once. `name` (a group): renamed on the network, then here (event `chat.updated`). The same value again changes nothing.",
          protect: true,
          errorResponses: { ...BODY_ERRORS, ...GROUP_CHANGE, 400: "Invalid input naming the field: `mode` not auto, supervised or human, `name` empty or too long, or neither given.", 409: `${GROUP_CHANGE[409]} (a name only)` },
        },
      })
      .input(updateChatInput)
      .output(chatOutput)
      .mutation(async ({ ctx, input }) => {
        if (input.mode !== undefined) await setChatMode(ctx.app, input.id, input.mode, ctx.key.id);
        return { success: true, chat: input.name !== undefined ? await renameGroup(ctx.app, input.id, input.name) : await chatRecordById(ctx.app.storage, input.id) };
      }),

    addParticipant: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/chats/{id}/participants",
          tags,
          summary: "Add a participant to a group chat",
          description: "Adds `phone` on the network, then here (event `chat.updated`). One already in the group changes nothing.",
          protect: true,
          errorResponses: { ...BODY_ERRORS, ...GROUP_CHANGE },
        },
      })
      .input(participantInput)
      .output(chatOutput)
      .mutation(async ({ ctx, input }) => {
        await requireWrite(ctx.key, [input.phone], ctx.app.storage.messages);
        return { success: true, chat: await setGroupParticipant(ctx.app, input.id, input.phone, true) };
      }),

    removeParticipant: scoped("messages:send")
      .meta({
        openapi: {
          method: "DELETE",
          path: "/api/chats/{id}/participants/{phone}",
          tags,
          summary: "Remove a participant from a group chat",
          description: "Removes `phone` (raw or percent-encoded) on the network, then here (event `chat.updated`).",
          protect: true,
          errorResponses: { ...READ_ERRORS, ...GROUP_CHANGE, 400: `${BAD_ID}, or \`phone\` is not E.164.`, 404: "No chat with this id, or `phone` is not one of its participants." },
        },
      })
      .input(participantInPathInput)
      .output(chatOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, chat: await setGroupParticipant(ctx.app, input.id, input.phone, false) })),

    startTyping: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/chats/{id}/typing",
          tags,
          summary: "Show our typing indicator in a chat",
          description: "As POST /api/contacts/{phone}/typing, for any chat: in a group too it stops when we send a message there, and by itself after 60 s. No body.",
          protect: true,
          errorResponses: TYPING,
        },
      })
      .input(chatInput())
      .output(typingOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, ...(await setChatTyping(ctx.app, input.id, true)) })),

    stopTyping: scoped("messages:send")
      .meta({
        openapi: {
          method: "DELETE",
          path: "/api/chats/{id}/typing",
          tags,
          summary: "Stop our typing indicator in a chat",
          description: "As DELETE /api/contacts/{phone}/typing, for any chat.",
          protect: true,
          errorResponses: TYPING,
        },
      })
      .input(chatInput())
      .output(typingOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, ...(await setChatTyping(ctx.app, input.id, false)) })),

    markRead: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/chats/{id}/read",
          tags,
          summary: "Mark a chat read",
          description: "Every inbound message of the chat gets `read_at`; a network with read receipts is told first. Answers the chat as it is then (`unread` 0). No body.",
          protect: true,
          errorResponses: { ...TYPING, 422: "The network has read receipts but cannot send them now (BlueBubbles with its Private API off); nothing changed." },
        },
      })
      .input(chatInput())
      .output(chatOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, chat: await markChatRead(ctx.app, input.id) })),

    get: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/chats/{id}",
          tags,
          summary: "A chat",
          description: "Its kind, name, participants and latest activity.",
          protect: true,
          errorResponses: { ...READ_ERRORS, ...NOT_FOUND, 400: `${BAD_ID}.` },
        },
      })
      .input(chatInput())
      .output(chatOutput)
      .query(async ({ ctx, input }) => ({ success: true, chat: await chatRecordById(ctx.app.storage, input.id) })),
  });
