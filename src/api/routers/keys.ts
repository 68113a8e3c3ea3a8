import { createdKeyOutput, createKey, createKeyInput, keyIdInput, keysOutput, listKeys, revokedKeyOutput, revokeKey } from "../../auth/keys";
import { BODY_ERRORS, READ_ERRORS } from "../error-responses";
import { documentedOnly, noInput, router, scoped } from "../trpc";

const tags = ["keys"];
const FORBIDDEN = { 403: "The key lacks keys:manage, or asked for more than its own scopes and limits (the message names what)." };

/** API keys (docs/security.md): every one of these needs keys:manage; the CLI's `keys` commands do the same. */
export const keysRouter = router({
  list: scoped("keys:manage")
    .meta({
      openapi: {
        method: "GET",
        path: "/api/keys",
        tags,
        summary: "Every stored key, revoked ones too",
        description: "Oldest first, with scopes, limits, who created each and when it was last used; never the key itself, and never API_KEYS keys.",
        protect: true,
        errorResponses: { 401: "", 403: FORBIDDEN[403], 405: "", 429: "", 500: "" },
      },
    })
    .input(noInput)
    .output(documentedOnly(keysOutput))
    .query(async ({ ctx }) => ({ success: true as const, api_keys: await listKeys(ctx.app.storage.apiKeys) })),

  create: scoped("keys:manage")
    .meta({
      successStatus: 201,
      openapi: {
        method: "POST",
        path: "/api/keys",
        tags,
        summary: "Create a key",
        description:
          "A new key with `scopes` (default *) and limits (`lines`, `reach`, `expires_at`; left out, the creator's), never more than the creating key holds. The answer is the only time the key is shown. Event `key.created`.",
        protect: true,
        successDescription: "Created; `key` is shown only here.",
        errorResponses: { ...BODY_ERRORS, ...FORBIDDEN, 409: "A key in use already has this name." },
      },
    })
    .input(createKeyInput)
    .output(documentedOnly(createdKeyOutput))
    .mutation(async ({ ctx, input }) => {
      const { key, info } = await createKey(ctx.app.storage, input, ctx.key);
      return { success: true as const, key, api_key: info };
    }),

  revoke: scoped("keys:manage")
    .meta({
      openapi: {
        method: "DELETE",
        path: "/api/keys/{id}",
        tags,
        summary: "Revoke a key",
        description: "By id or name: it stops working at once, in every process, and its console sessions end. Event `key.revoked`.",
        protect: true,
        errorResponses: {
          ...READ_ERRORS,
          403: "The key lacks keys:manage, the key to revoke is wider than it, or it is an API_KEYS key (remove it from API_KEYS instead).",
          404: "No key in use has this id or name.",
        },
      },
    })
    .input(keyIdInput)
    .output(documentedOnly(revokedKeyOutput))
    .mutation(async ({ ctx, input }) => ({ success: true as const, api_key: await revokeKey(ctx.app.storage, input.id, ctx.key) })),
});
