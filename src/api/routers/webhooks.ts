import { z } from "zod";
import { inboundInput } from "../../messages/schemas";
import { storeInbound } from "../../messages/network-events";
import { repliedMessage } from "../../messages/service";
import { authedProcedure, router } from "../trpc";

const inboundOutput = z.object({ success: z.boolean(), message_id: z.string(), timestamp: z.string() });

export const webhooksRouter = (maxMessageLength: number) =>
  router({
    loopback: authedProcedure
      .meta({
        openapi: {
          method: "POST",
          path: "/webhooks/loopback",
          tags: ["webhooks"],
          summary: "Deliver an inbound message on the loopback network",
          description:
            "Stores an inbound message (status received), with its `media` downloaded and kept as the real networks' are (a file that cannot be downloaded is logged and left out). `message` may be left out when `media` is given. The same `id` twice stores one message and answers the first one's message_id. An opt-out or opt-in keyword (STOP, START…) changes the contact's opt-out as on every network.",
          protect: true,
          errorResponses: [400, 401, 405, 413, 415, 429, 500],
        },
      })
      .input(inboundInput(maxMessageLength))
      .output(inboundOutput)
      .mutation(async ({ ctx, input }) => {
        const { app } = ctx;
        const replyTo = input.reply_to === undefined ? undefined : (await repliedMessage(app.storage.messages, input.phone, input.reply_to)).id;
        const { record } = await storeInbound(
          app.storage,
          "loopback",
          {
            phone: input.phone,
            message: input.message ?? "",
            ...(input.id ? { networkId: input.id } : {}),
            ...(input.media ? { media: input.media.map((m) => ({ url: m.url })) } : {}),
            ...(replyTo ? { replyTo } : {}),
          },
          app.log,
          app.media,
        );
        return { success: true, message_id: record.id, timestamp: record.timestamp };
      }),
  });
