import { createdKeyOutput, createKey, keyNameInput, keysOutput, listKeys, revokedKeyOutput, revokeKey } from "../../auth/keys";
import { authedProcedure, documentedOnly, noInput, router } from "../trpc";

/** API keys, as `bun run textwire keys` manages them (tRPC only, for the console). */
export const keysRouter = router({
  list: authedProcedure
    .input(noInput)
    .output(documentedOnly(keysOutput))
    .query(async ({ ctx }) => ({ keys: await listKeys(ctx.app.storage.apiKeys) })),

  create: authedProcedure
    .input(keyNameInput)
    .output(documentedOnly(createdKeyOutput))
    .mutation(({ ctx, input }) => createKey(ctx.app.storage.apiKeys, input.name)),

  revoke: authedProcedure
    .input(keyNameInput)
    .output(documentedOnly(revokedKeyOutput))
    .mutation(async ({ ctx, input }) => {
      await revokeKey(ctx.app.storage.apiKeys, input.name);
      return { success: true as const };
    }),
});
