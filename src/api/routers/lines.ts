import { z } from "zod";
import { createLine, deleteLine, getLine, listLines, previewRoute, testLine, updateLine } from "../../lines/service";
import { phoneSchema } from "../../messages/schemas";
import { createLineInput, lineOutput, lineRecord, lineRef, linesOutput, lineTestOutput, updateLineInput } from "../../lines/schemas";
import { BODY_ERRORS, READ_ERRORS } from "../error-responses";
import { hasScope, lineRefusal, requireScope, type KeyAuth } from "../../auth/policy";
import type { LineRecord } from "../../lines/schemas";
import { authedProcedure, documentedOnly, noInput, router, scoped } from "../trpc";

/** A line as `key` may see it: 403 for a line outside its limit; without lines:manage, no settings (CONTRACT: scopes). */
function shownTo(key: KeyAuth, line: LineRecord): LineRecord {
  const refused = lineRefusal(key, line.id);
  if (refused) throw refused;
  if (hasScope(key, "lines:manage")) return line;
  const { settings: _, webhook_url: __, ...summary } = line;
  return summary;
}

/** Reading lines takes lines:manage or messages:read. */
const reads = authedProcedure.use(({ ctx, next }) => {
  requireScope(ctx.key, "lines:manage", "messages:read");
  return next();
});

const tags = ["lines"];
const NOT_FOUND = { 404: "No line with this id or name." };
const FIELDS =
  "Invalid input naming the field: `name` not 1 to 40 lowercase letters, digits or '-'; `network` unknown; a setting or credential missing, malformed or not of this network (`settings.url`, `credentials.auth_token`, …); `address` not our number (Twilio); `fallback` no line.";

/** Lines (docs/lines.md): the deployment's numbers and networks. Credentials are taken, never returned. */
export const linesRouter = router({
  list: reads
    .meta({
      openapi: {
        method: "GET",
        path: "/api/lines",
        tags,
        summary: "Every line",
        description: "Every line, enabled or not, oldest first: the environment's (`managed: env`, named `default`) and those added through the API. Credentials are never shown.",
        protect: true,
        errorResponses: READ_ERRORS,
      },
    })
    .input(noInput)
    .output(linesOutput)
    .query(({ ctx }) => ({ success: true, lines: listLines(ctx.app).filter((l) => !lineRefusal(ctx.key, l.id)).map((l) => shownTo(ctx.key, l)) })),

  create: scoped("lines:manage")
    .meta({
      successStatus: 201,
      openapi: {
        method: "POST",
        path: "/api/lines",
        tags,
        summary: "Add a line",
        description:
          "A number or account on a network: its settings are checked and its credentials stored encrypted (SECRET_KEY). It is used by every process within 5 s. Point the network's webhooks at the answer's `webhook_url`. Event `line.created`.",
        protect: true,
        successDescription: "Created.",
        errorResponses: {
          ...BODY_ERRORS,
          400: FIELDS,
          409: "A line with this name exists.",
          422: "The deployment cannot serve this network: a twilio line needs PUBLIC_URL, an android line an https PUBLIC_URL.",
          502: "The network did not take the webhook registration (Android).",
        },
      },
    })
    .input(createLineInput)
    .output(lineOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, line: await createLine({ ...ctx.app, actorKeyId: ctx.keyId ?? null }, input) })),

  get: reads
    .meta({
      openapi: { method: "GET", path: "/api/lines/{id}", tags, summary: "A line", description: "`id`: the line's id or name.", protect: true, errorResponses: { ...READ_ERRORS, ...NOT_FOUND } },
    })
    .input(lineRef())
    .output(lineOutput)
    .query(({ ctx, input }) => ({ success: true, line: shownTo(ctx.key, getLine(ctx.app, decodeURIComponent(input.id))) })),

  update: scoped("lines:manage")
    .meta({
      openapi: {
        method: "PATCH",
        path: "/api/lines/{id}",
        tags,
        summary: "Change a line",
        description:
          "The fields given change: `settings` replaces the settings, each credential given replaces that one. `default: true` takes the mark from the line that had it; `enabled: false` stops sends through it (inbound still stored). The environment's line changes only through the environment (409), except `default: true`. Event `line.updated`.",
        protect: true,
        errorResponses: { ...BODY_ERRORS, ...NOT_FOUND, 400: FIELDS, 409: "The name is taken, the line is the environment's, or it is the default line being disabled.", 422: "The deployment cannot serve this network." },
      },
    })
    .input(lineRef().extend(updateLineInput.shape).strict())
    .output(lineOutput)
    .mutation(async ({ ctx, input: { id, ...patch } }) => ({ success: true, line: await updateLine({ ...ctx.app, actorKeyId: ctx.keyId ?? null }, decodeURIComponent(id), patch) })),

  delete: scoped("lines:manage")
    .meta({
      openapi: {
        method: "DELETE",
        path: "/api/lines/{id}",
        tags,
        summary: "Delete a line",
        description: "Only a line that never carried a message or a group: otherwise 409, disable it instead. Lines falling back to it lose their fallback. Event `line.deleted`.",
        protect: true,
        errorResponses: { ...READ_ERRORS, ...NOT_FOUND, 409: "The line has messages, is the default, or is the environment's." },
      },
    })
    .input(lineRef())
    .output(lineOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, line: await deleteLine({ ...ctx.app, actorKeyId: ctx.keyId ?? null }, decodeURIComponent(input.id)) })),

  test: scoped("lines:manage")
    .meta({
      openapi: {
        method: "POST",
        path: "/api/lines/{id}/test",
        tags,
        summary: "Check a line against its network",
        description:
          "One authenticated call that proves the settings and credentials, sending no message (Twilio: the account; BlueBubbles: server/info; Android: the device). `ok` false says in `detail` what failed; the answer is 200 either way.",
        protect: true,
        errorResponses: { ...READ_ERRORS, ...NOT_FOUND },
      },
    })
    .input(lineRef())
    .output(lineTestOutput)
    .mutation(async ({ ctx, input }) => ({ success: true, ...(await testLine(ctx.app, decodeURIComponent(input.id))) })),

  /** The console's composer: where a send to `phone` would go now (tRPC only). */
  route: scoped("messages:send")
    .input(z.object({ phone: phoneSchema }))
    .output(documentedOnly(z.object({ success: z.boolean(), line: lineRecord, reason: z.string(), rerouted_from: z.string().nullable() })))
    .query(async ({ ctx, input }) => ({ success: true, ...(await previewRoute(ctx.app, input.phone)) })),
});
