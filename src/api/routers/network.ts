import { z } from "zod";
import { CAPABILITIES } from "../../vocabulary/network";
import { authedProcedure, documentedOnly, noInput, router } from "../trpc";

const networkOutput = z.object({
  success: z.boolean(),
  network: z.object({ name: z.string(), capabilities: z.record(z.enum(CAPABILITIES), z.boolean()) }),
});

/** The network this deployment runs on and what it can do. */
export const networkRouter = router({
  get: authedProcedure
    .input(noInput)
    .output(documentedOnly(networkOutput))
    .query(({ ctx }) => ({ success: true, network: { name: ctx.app.network.name, capabilities: ctx.app.network.capabilities } })),
});
