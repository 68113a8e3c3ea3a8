import { networkOutput, networkInfo } from "../../messages/network-actions";
import { READ_ERRORS } from "../error-responses";
import { scoped, noInput, router } from "../trpc";

/** The messaging network this deployment uses and what it can do (CONTRACT §14). */
export const networkRouter = router({
  get: scoped("messages:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/network",
        tags: ["network"],
        summary: "The network and what it can do",
        description:
          "The default line's network and its capabilities (each line's: GET /api/lines). Asking for one it lacks (a reaction, typing, an edit, an unsend) is 422 naming the field and the network, with nothing changed; marking a conversation read works everywhere (without `read_receipts` only Textwire keeps it).",
        protect: true,
        errorResponses: READ_ERRORS,
      },
    })
    .input(noInput)
    .output(networkOutput)
    .query(({ ctx }) => ({ success: true, network: networkInfo(ctx.app.lines.default()) })),
});
