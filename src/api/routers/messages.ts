import {
  historyInput,
  historyOutput,
  pollInput,
  pollOutput,
  sendInput,
  sendOutput,
} from "../../messages/schemas";
import { listHistory, pollInbound, sendMessage, sentAnswer } from "../../messages/service";
import { generateInput, generateOutput } from "../../generator/schemas";
import { generateReply, generatedAnswer } from "../../generator/service";
import { idempotentMutation } from "../idempotency";
import { authedProcedure, documentedOnly, router } from "../trpc";

const tags = ["messages"];

/** How long an idempotency key stays locked by a request that stored nothing yet. */
const SEND_LOCK_MS = 60_000;

export const messagesRouter = (maxMessageLength: number) =>
  router({
    send: authedProcedure
      .meta({ openapi: { method: "POST", path: "/api/send", tags, summary: "Send a text message", protect: true, errorResponses: [400, 401, 409, 413, 415, 429, 502] } })
      .input(sendInput(maxMessageLength))
      .output(sendOutput)
      .mutation(({ ctx, input }) =>
        idempotentMutation(ctx, "send", input, SEND_LOCK_MS, async (claim) =>
          sentAnswer(await sendMessage(ctx.app, input, claim && { claim, answer: sentAnswer })),
        ),
      ),

    // Declared before history: trpc-to-openapi takes the first route that matches.
    poll: authedProcedure
      .meta({ openapi: { method: "GET", path: "/api/messages/poll", tags, summary: "New inbound messages, oldest first", protect: true, errorResponses: [400, 401, 429] } })
      .input(pollInput)
      .output(documentedOnly(pollOutput))
      .query(({ ctx, input }) => ({ success: true, ...pollInbound(ctx.app.store, input) })),

    history: authedProcedure
      .meta({ openapi: { method: "GET", path: "/api/messages/{phone}", tags, summary: "Messages with one contact, newest first", protect: true, errorResponses: [400, 401, 429] } })
      .input(historyInput)
      .output(documentedOnly(historyOutput))
      .query(({ ctx, input }) => ({ success: true, ...listHistory(ctx.app.store, input) })),

    generate: authedProcedure
      .meta({ openapi: { method: "POST", path: "/api/generate", tags, summary: "Write a reply with the AI generator, and send it if asked", protect: true, errorResponses: [400, 401, 409, 413, 415, 429, 502, 503] } })
      .input(generateInput)
      .output(generateOutput)
      .mutation(({ ctx, input, signal }) => {
        const { auto_send, ...request } = input;
        const lockMs = ctx.app.config.GENERATOR_TIMEOUT_MS + SEND_LOCK_MS;
        return idempotentMutation(ctx, "generate", input, lockMs, async (claim) =>
          generatedAnswer(await generateReply(ctx.app, { ...request, autoSend: auto_send === true }, { signal, claim })),
        );
      }),
  });
