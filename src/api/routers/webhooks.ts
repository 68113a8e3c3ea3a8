import { z } from "zod";
import { inboundInput } from "../../messages/schemas";
import { recordInbound } from "../../messages/service";
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
          description: "Stores an inbound message (status received). The same `id` twice stores one message and answers the first one's message_id.",
          protect: true,
          errorResponses: [400, 401, 405, 413, 415, 429, 500],
        },
      })
      .input(inboundInput(maxMessageLength))
      .output(inboundOutput)
      .mutation(async ({ ctx, input }) => {
        const { record } = await recordInbound(ctx.app.storage.messages, "loopback", { phone: input.phone, message: input.message, networkId: input.id });
        return { success: true, message_id: record.id, timestamp: record.timestamp };
      }),
  });
