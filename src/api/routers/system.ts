import { z } from "zod";
import type { App } from "../../app";
import { scopesOf, type KeyAuth } from "../../auth/policy";
import { REACHES, SCOPES } from "../../vocabulary/scopes";
import { authedProcedure, documentedOnly, noInput, router } from "../trpc";

export const systemInfoOutput = z.object({
  network: z.string().meta({ description: "The default line's network: loopback, twilio, bluebubbles or android." }),
  generator: z.boolean().meta({ description: "An AI generator is configured (OPENAI_API_KEY)." }),
  workflows_dir: z.string().nullable().meta({ description: "WORKFLOWS_DIR; null when off." }),
  scopes: z.array(z.enum(SCOPES)).meta({ description: "What the calling key (the console's session) may do, `*` spelled out: the console hides the rest." }),
  reach: z.enum(REACHES),
});

/** What the console adapts to: the loopback network's inbound simulation, the generator, workflows. */
export function systemInfo(app: App, key: KeyAuth): z.infer<typeof systemInfoOutput> {
  return {
    scopes: scopesOf(key),
    reach: key.reach,
    network: app.lines.default().row.network,
    generator: app.generator !== null,
    workflows_dir: app.config.WORKFLOWS_DIR === "off" ? null : app.config.WORKFLOWS_DIR,
  };
}

/** This server's setup (tRPC only, for the console). */
export const systemRouter = router({
  info: authedProcedure
    .input(noInput)
    .output(documentedOnly(systemInfoOutput))
    .query(({ ctx }) => systemInfo(ctx.app, ctx.key)),
});
