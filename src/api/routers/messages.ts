import {
  historyInput,
  historyOutput,
  pollInput,
  pollOutput,
  sendInput,
  sendOutput,
} from "../../messages/schemas";
import { listHistory, pollInbound, sendMessage } from "../../messages/service";
import { generateInput, generateOutput } from "../../generator/schemas";
import { generateReply } from "../../generator/service";
import { authedProcedure, router } from "../trpc";

const tags = ["messages"];

export const messagesRouter = (maxMessageLength: number) =>
  router({
    send: authedProcedure
      .meta({ openapi: { method: "POST", path: "/api/send", tags, summary: "Send a text message", protect: true } })
      .input(sendInput(maxMessageLength))
      .output(sendOutput)
      .mutation(async ({ ctx, input }) => {
        const sent = await sendMessage(ctx.app, input);
        return { success: true, message_id: sent.id, timestamp: sent.timestamp };
      }),

    // Declared before history: trpc-to-openapi takes the first route that matches.
    poll: authedProcedure
      .meta({ openapi: { method: "GET", path: "/api/messages/poll", tags, summary: "New inbound messages, oldest first", protect: true } })
      .input(pollInput)
      .output(pollOutput)
      .query(({ ctx, input }) => ({ success: true, ...pollInbound(ctx.app.store, input) })),

    history: authedProcedure
      .meta({ openapi: { method: "GET", path: "/api/messages/{phone}", tags, summary: "Messages with one contact, newest first", protect: true } })
      .input(historyInput)
      .output(historyOutput)
      .query(({ ctx, input }) => ({ success: true, ...listHistory(ctx.app.store, input) })),

    generate: authedProcedure
      .meta({ openapi: { method: "POST", path: "/api/generate", tags, summary: "Write a reply with the AI generator, and send it if asked", protect: true } })
      .input(generateInput)
      .output(generateOutput)
      .mutation(async ({ ctx, input, signal }) => {
        const { auto_send, ...request } = input;
        const reply = await generateReply(ctx.app, { ...request, autoSend: auto_send === true }, signal);
        return { success: true, generated_message: reply.text, message_id: reply.id, sent: reply.sent, timestamp: reply.timestamp };
      }),
  });
