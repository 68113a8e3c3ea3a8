import { chatInput, chatMessagesInput, chatOutput, chatsInput, chatsOutput } from "../../messages/chat-schemas";
import { chatById, listChatMessages, listChats, toChatRecord } from "../../messages/chats";
import { historyOutput } from "../../messages/schemas";
import { READ_ERRORS } from "../error-responses";
import { authedProcedure, documentedOnly, router } from "../trpc";

const tags = ["chats"];
const NOT_FOUND = { 404: "No chat with this id." };
const BAD_ID = "`id` is not a chat id";

/** Chats (docs/api.md "Chats"): every conversation, a contact's direct chat or a group. */
export const chatsRouter = (_maxMessageLength: number) =>
  router({
    list: authedProcedure
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

    messages: authedProcedure
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

    get: authedProcedure
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
      .query(async ({ ctx, input }) => ({ success: true, chat: toChatRecord(await chatById(ctx.app.storage, input.id)) })),
  });
