import { z } from "zod";
import { inboundInput } from "../../messages/schemas";
import { receiveLoopback } from "../../messages/network-events";
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
      .mutation(({ ctx, input }) => receiveLoopback(ctx.app, input)),
  });
