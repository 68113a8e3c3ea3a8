import { z } from "zod";
import { CAPABILITIES, type Capability } from "../../vocabulary/network";
import { authedProcedure, noInput, router } from "../trpc";

// Minimal tRPC face of GET /api/network for the console (branch console24); branch api24's full procedure replaces it.
const networkOutput = z.object({
  success: z.boolean(),
  network: z.object({ name: z.string(), capabilities: z.record(z.enum(CAPABILITIES), z.boolean()) as z.ZodType<Record<Capability, boolean>> }),
});

export const networkRouter = router({
  get: authedProcedure
    .input(noInput)
    .output(networkOutput)
    .query(({ ctx }) => ({ success: true, network: { name: ctx.app.network.name, capabilities: ctx.app.network.capabilities } })),
});
