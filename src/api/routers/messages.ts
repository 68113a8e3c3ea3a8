import {
  approveInput,
  draftsOutput,
  editInput,
  historyInput,
  messageIdInput,
  messageOutput,
  historyOutput,
  pollInput,
  pollOutput,
  reactInput,
  scheduledInput,
  scheduledOutput,
  sendInput,
  sendOutput,
} from "../../messages/schemas";
import { editOurMessage, unsendOurMessage } from "../../messages/edits";
import { currentRecord } from "../../messages/network-actions";
import { reactToMessage, removeOurReaction } from "../../messages/reactions";
import { cancelScheduled, listScheduled } from "../../messages/scheduled";
import { approveDraft, listDrafts, rejectDraft } from "../../messages/drafts";
import { approvalRefusal } from "../../messages/send-policy";
import { listHistory, pollInbound, sendAnswered } from "../../messages/service";
import { generateOutput, generateRequestInput } from "../../generator/schemas";
import { generateReply } from "../../generator/service";
import { idempotencyKeyHeader, idempotentMutation } from "../idempotency";
import { BODY_ERRORS, READ_ERRORS } from "../error-responses";
import { lineRefusal, requireScope } from "../../auth/policy";
import { authedProcedure, scoped, documentedOnly, router } from "../trpc";

const tags = ["messages"];

// The error statuses each route answers, for the OpenAPI document (src/api/openapi.ts adds
// the envelope and headers): "" takes the status's usual description, text says more.
const read = READ_ERRORS;
const write = {
  ...BODY_ERRORS,
  409: "The Idempotency-Key is in use or was used with another body; or an automated send into a chat whose mode is `human` (`error.reason` CHAT_HUMAN): nothing is stored.",
};
/** The answers of approving or rejecting a draft. */
const DRAFT_ERRORS = { 404: "No message with this id.", 409: "The message is not a draft (any more): it was approved, rejected or never was one; the message says its status." };
const NETWORK_ERRORS = {
  400: "Invalid input (the field is named), an invalid Idempotency-Key, or the network refused the recipient (the message stays in history as failed).",
  403: "The key lacks messages:send and drafts:write (`scope: this key lacks messages:send`), its reach is `known` and the phone never wrote first, the contact opted out by replying STOP (`phone: the contact opted out by replying STOP`, `error.reason` OPTED_OUT), or an automated send into a group muted by a STOP (`error.reason` CHAT_MUTED): nothing is stored or sent. When the network reports it (Twilio's error 21610) the message was already stored and stays failed.",
  429: "The key's rate limit or failed-authentication limit (Retry-After), or the network throttled the send (the message stays in history as failed).",
  502: "The network failed; the message stays in history as failed with its error.",
  504: "The network did not answer in time: the message may still go out. `error.message_id` names it; it keeps a non-final status until the network's report settles it, and a retry with the same Idempotency-Key answers from that record without sending again.",
};

/** What every action on a message that the network carries answers besides its input errors. */
const ON_THE_NETWORK = {
  404: "No message with this id.",
  409: "The message is not on the network (it has no network id: never sent, or received without one).",
  502: "The network failed; nothing changed.",
};
const UNPROCESSABLE = (field: string) =>
  `The network cannot do this (GET /api/network): \`${field}: the <network> network cannot …\`, or cannot now (BlueBubbles with its Private API off); nothing changed.`;
const OUR_WINDOW = (verb: string, late: string) =>
  `The message cannot be ${verb}: it is not ours, not sent (yet), unsent, or ${late}; the message says which (\`message <id> cannot be ${verb}: …\`).`;

/** A key that may only draft never decides drafts, even holding drafts:approve. */
function refuseApproval(key: Parameters<typeof approvalRefusal>[0]): void {
  const refusal = approvalRefusal(key);
  if (refusal) throw refusal;
}

/** How long an idempotency key stays locked by a request that stored nothing yet. */
export const SEND_LOCK_MS = 60_000;

export const messagesRouter = (maxMessageLength: number) =>
  router({
    send: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/api/send",
          tags,
          summary: "Send a text message",
          description:
            "Stores the message (queued), then asks the network to send it. Once the network has accepted it the answer is success. With `send_at` it is stored `scheduled` and sent at that time. An automated send (`automated: true`, or any send by a key holding drafts:write but not messages:send) into a `supervised` chat, and every send of such a drafting key, is stored as a `draft` and answered with `status: \"draft\"`: nothing goes out until a person approves it (docs/supervision.md). Safe to retry with an Idempotency-Key.",
          protect: true,
          requestHeaders: idempotencyKeyHeader,
          errorResponses: { ...write, ...NETWORK_ERRORS },
        },
      })
      .input(sendInput(maxMessageLength))
      .output(sendOutput)
      .mutation(async ({ ctx, input }) => {
        // Scopes and reach decide with the chat's mode, per send (src/messages/send-policy.ts); this refuses a key that can do neither at once.
        requireScope(ctx.key, "messages:send", "drafts:write");
        return idempotentMutation(ctx, "send", input, SEND_LOCK_MS, (claim) => sendAnswered({ ...ctx.app, key: ctx.key }, input, claim));
      }),

    drafts: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/drafts",
          tags,
          summary: "Drafts waiting for a person, oldest first",
          description:
            "Automated sends held for approval (docs/supervision.md): into `supervised` chats, and every send of a drafting key. Approve (optionally edited) or reject each with POST /api/messages/{id}/approve or /reject.",
          protect: true,
          errorResponses: { ...read, 400: "`limit` is not a whole number of at least 1, or `offset` not one of at least 0." },
        },
      })
      .input(scheduledInput)
      .output(documentedOnly(draftsOutput))
      .query(({ ctx, input }) => listDrafts(ctx.app, input)),

    approve: scoped("drafts:approve")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/approve",
          tags,
          summary: "Approve a draft: send it",
          description:
            "Sends the draft, the same record leaving `draft` (`queued`, then as any send; `scheduled` when its `send_at` is still ahead), with `message` as its text when given (edited). Event `message.approved` with `by`. Exactly once: a second approval finds no draft (409).",
          protect: true,
          successDescription: "The message as the send left it.",
          errorResponses: {
            ...BODY_ERRORS,
            ...DRAFT_ERRORS,
            403: "The key lacks drafts:approve or may only draft (no key approves what it proposed), or the contact opted out since (the draft stays).",
            502: "The network failed; the message stays in history as failed with its error.",
            504: NETWORK_ERRORS[504],
          },
        },
      })
      .input(approveInput(maxMessageLength))
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => {
        refuseApproval(ctx.key);
        return { success: true, message: await approveDraft({ ...ctx.app, key: ctx.key }, input.id, input.message, ctx.key.id) };
      }),

    reject: scoped("drafts:approve")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/reject",
          tags,
          summary: "Reject a draft: it is never sent",
          description: "The draft becomes `rejected` (final) and is never sent. Event `message.rejected` with `by`. No body.",
          protect: true,
          successDescription: "The message, now `rejected`.",
          errorResponses: { ...read, ...DRAFT_ERRORS },
        },
      })
      .input(messageIdInput)
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => {
        refuseApproval(ctx.key);
        return { success: true, message: await rejectDraft(ctx.app, input.id, ctx.key.id) };
      }),

    // Declared before history: the first route that matches wins (src/api/rest.ts keeps this order).
    poll: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/messages/poll",
          tags,
          summary: "New inbound messages, oldest first",
          description:
            "Stateless: polling consumes nothing. Pass the timestamp of the last message you got as the next `since`: you never miss a message and never get one twice. Poll every 5 to 10 s.",
          protect: true,
          errorResponses: { ...read, 400: "`since` is not an ISO 8601 date-time, `phone` is not E.164, or `limit` is not a whole number of at least 1." },
        },
      })
      .input(pollInput)
      .output(documentedOnly(pollOutput))
      .query(({ ctx, input }) => pollInbound({ ...ctx.app, key: ctx.key }, input)),

    // Declared before history, as poll is.
    scheduled: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/messages/scheduled",
          tags,
          summary: "Scheduled messages still waiting, soonest first",
          description: "Messages sent with `send_at` that are still `scheduled`, by `send_at`, a page at a time; `total` counts them all.",
          protect: true,
          errorResponses: { ...read, 400: "`limit` is not a whole number of at least 1, or `offset` not one of at least 0." },
        },
      })
      .input(scheduledInput)
      .output(documentedOnly(scheduledOutput))
      .query(({ ctx, input }) => listScheduled(ctx.app.storage.messages, input)),

    cancel: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/cancel",
          tags,
          summary: "Cancel a scheduled message",
          description: "A `scheduled` message becomes `canceled` (final) and is never sent. No body.",
          protect: true,
          successDescription: "The message, now `canceled`.",
          errorResponses: {
            ...read,
            404: "No message with this id.",
            409: "The message is not (or no longer) `scheduled`: it is being sent, was sent, or was canceled; the message says its status.",
          },
        },
      })
      .input(messageIdInput)
      .output(messageOutput)
      .mutation(({ ctx, input }) => cancelScheduled(ctx.app, input.id)),

    react: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/reactions",
          tags,
          summary: "React to a message (a tapback)",
          description:
            "Puts our reaction on a message of a conversation, ours or the contact's, and sends it to the network. One reaction of ours a message: a new one replaces the one before (event `message.reaction_added`); the same one again changes nothing.",
          protect: true,
          successDescription: "The message, with our reaction in `reactions`.",
          errorResponses: { ...BODY_ERRORS, ...ON_THE_NETWORK, 422: UNPROCESSABLE("reaction") },
        },
      })
      .input(reactInput)
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, message: await reactToMessage(ctx.app, input.id, input.reaction) })),

    unreact: scoped("messages:send")
      .meta({
        openapi: {
          method: "DELETE",
          path: "/api/messages/{id}/reactions",
          tags,
          summary: "Take our reaction off a message",
          description: "Removes our reaction (event `message.reaction_removed`) and tells the network; the contact's stays. None of ours: nothing changes.",
          protect: true,
          successDescription: "The message, without our reaction.",
          errorResponses: { ...read, ...ON_THE_NETWORK, 422: UNPROCESSABLE("reaction") },
        },
      })
      .input(messageIdInput)
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, message: await removeOurReaction(ctx.app, input.id) })),

    edit: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/edit",
          tags,
          summary: "Edit one of our messages",
          description:
            "Replaces the text of one of our sent messages on the network and in its record (`edited_at`; event `message.edited` with `previous_message`): within 15 minutes of sending, at most 5 times.",
          protect: true,
          successDescription: "The message with its new text.",
          errorResponses: { ...BODY_ERRORS, ...ON_THE_NETWORK, 409: OUR_WINDOW("edited", "sent more than 15 minutes ago, or already edited 5 times"), 422: UNPROCESSABLE("message") },
        },
      })
      .input(editInput(maxMessageLength))
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, message: await editOurMessage(ctx.app, input.id, input.message) })),

    unsend: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/api/messages/{id}/unsend",
          tags,
          summary: "Unsend one of our messages",
          description: "Takes one of our sent messages back on the network and empties its text (`unsent_at`; event `message.unsent`): within 2 minutes of sending. No body.",
          protect: true,
          successDescription: "The message, its text empty.",
          errorResponses: { ...read, ...ON_THE_NETWORK, 409: OUR_WINDOW("unsent", "sent more than 2 minutes ago"), 422: UNPROCESSABLE("unsend") },
        },
      })
      .input(messageIdInput)
      .output(messageOutput)
      .mutation(async ({ ctx, input }) => ({ success: true, message: await unsendOurMessage(ctx.app, input.id) })),

    history: scoped("messages:read")
      .meta({
        openapi: {
          method: "GET",
          path: "/api/messages/{phone}",
          tags,
          summary: "Messages with one contact, newest first",
          description: "Every message exchanged with that phone, a page at a time; `total` counts them all. An unknown phone has none.",
          protect: true,
          errorResponses: { ...read, 400: "`phone` is not E.164, `limit` is not a whole number of at least 1, or `offset` not one of at least 0." },
        },
      })
      .input(historyInput)
      .output(documentedOnly(historyOutput))
      .query(({ ctx, input }) => listHistory({ ...ctx.app, key: ctx.key }, input)),

    generate: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/api/generate",
          tags,
          summary: "Write a reply with the AI generator, and send it if asked",
          description:
            "Writes a reply to the conversation in `context`, in `language` or the language of the last user turn. With `auto_send` it is sent exactly as by POST /api/send, to `phone` or into the chat `chat_id`; an automated send (docs/supervision.md): a group where a participant replied STOP (and not START since) refuses it (403), a `human` chat refuses it (409), and in a `supervised` chat (or for a key holding drafts:write but not messages:send) it is held as a draft: `sent` false and `message_id` the draft's. Safe to retry with an Idempotency-Key.",
          protect: true,
          requestHeaders: idempotencyKeyHeader,
          errorResponses: {
            ...write,
            ...NETWORK_ERRORS,
            502: "The generator failed, timed out or wrote empty or over-long text (nothing is sent), or, with auto_send, the network failed.",
            503: "No generator configured: set OPENAI_API_KEY.",
          },
        },
      })
      .input(generateRequestInput)
      .output(generateOutput)
      .mutation(async ({ ctx, input, signal }) => {
        const { auto_send, ...request } = input;
        // Writing a reply needs drafts:write or messages:send; with auto_send the send decides the rest (src/messages/send-policy.ts): a drafting key's is a draft.
        if (auto_send === true) requireScope(ctx.key, "messages:send", "drafts:write");
        else requireScope(ctx.key, "drafts:write", "messages:send");
        const lockMs = ctx.app.config.GENERATOR_TIMEOUT_MS + SEND_LOCK_MS;
        return idempotentMutation(ctx, "generate", input, lockMs, (claim) => generateReply({ ...ctx.app, key: ctx.key }, { ...request, autoSend: auto_send === true }, { signal, claim }));
      }),

    // tRPC only (no REST route: GET /api/messages/{id} is a phone's history): the record a send answered with an id (the MCP tools, docs/mcp.md).
    get: scoped("messages:read")
      .input(messageIdInput)
      .output(documentedOnly(messageOutput))
      .query(async ({ ctx, input }) => {
        const message = await currentRecord(ctx.app.storage, input.id);
        // A key limited to lines reads only the messages on them.
        const refused = lineRefusal(ctx.key, message.line_id);
        if (refused) throw refused;
        return { success: true, message };
      }),
  });
