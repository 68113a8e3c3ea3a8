import { z } from "zod";
import { chatOutput } from "../../messages/chat-schemas";
import { loopbackInput, messageOutput } from "../../messages/schemas";
import { receiveLoopback } from "../../messages/network-events";
import { scoped, router } from "../trpc";

const inboundOutput = z.object({ success: z.boolean(), message_id: z.string(), timestamp: z.string() });
const contactTypingOutput = z.object({ success: z.boolean(), typing: z.boolean().meta({ description: "Whether the contact is typing now." }) });

export const webhooksRouter = (maxMessageLength: number) =>
  router({
    loopback: scoped("messages:send")
      .meta({
        openapi: {
          method: "POST",
          path: "/webhooks/loopback",
          tags: ["webhooks"],
          summary: "Deliver what the contact does on the loopback network",
          description:
            "A message (`message` and/or `media`): stored as inbound (status received), with its `media` downloaded and kept as the real networks' are (a file that cannot be downloaded is logged and left out); the same `id` twice stores one message and answers the first one's message_id; an opt-out or opt-in keyword (STOP, START…) changes the contact's opt-out as on every network; an SMS reaction text (`Loved “…”`) quoting one of our last 50 messages to the contact is a reaction on it, answered with that message's id. " +
            "Or exactly one of `reaction`, `typing`, `read`, `edit`, `unsend`: applied as a real network's report is (events, no message stored), answered with the message it touched (`{ success, message }`) or, for typing, `{ success, typing }`. " +
            "With `chat` (`{ id, name, participants }`), a message is in that group chat (made on first sight) and `phone` is its sender; `chat` alone reports the group as it is now (renamed, participants changed: event `chat.updated`), answered `{ success, chat }`.",
          protect: true,
          errorResponses: {
            400: "Invalid input naming the field: a malformed field, none of message, media, reaction, typing, read, edit or unsend, more than one of them, `id` or `reply_to` without a message, or a message id not of this conversation.",
            401: "",
            405: "",
            409: "The message reacted to or read is not on the network (it has no network id).",
            413: "",
            415: "",
            429: "",
            500: "",
          },
        },
      })
      .input(loopbackInput(maxMessageLength))
      .output(z.union([inboundOutput, messageOutput, contactTypingOutput, chatOutput]))
      .mutation(({ ctx, input }) => receiveLoopback(ctx.app, input)),
  });
