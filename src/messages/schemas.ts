import { z } from "zod";
import { E164_HINT, isE164, phoneFromPath, phoneFromQuery } from "./phone";
import { messageTextProblem } from "./text";
import { parseIsoInstant } from "./time";

/** "is required" when missing, "must be <what>" when of the wrong type. */
export const typeError = (what: string) => ({
  error: (iss: { input?: unknown }) => (iss.input === undefined ? "is required" : `must be ${what}`),
});

export const phoneSchema = z
  .string(typeError("a string"))
  .refine(isE164, E164_HINT)
  .meta({ description: "E.164 phone number", example: "+14155550123" });

export const messageTextSchema = (maxLength: number) =>
  z
    .string(typeError("a string"))
    .superRefine((text, ctx) => {
      const problem = messageTextProblem(text, maxLength);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .meta({ description: `Message text: 1 to ${maxLength} characters (code points), not only whitespace, no control characters other than tab, LF and CR.` });

/**
 * A whole number, from JSON or from a query string ("50"; not "0x10", "1e2" or "1.0").
 * A pipe, so trpc-to-openapi leaves it alone instead of coercing with Number().
 */
const wholeNumber = (min: number, meta: { description: string; default: number }) =>
  z
    .union([z.number(), z.string().regex(/^\s*-?\d+\s*$/).transform(Number)], typeError("a whole number"))
    .pipe(z.number().int({ error: "must be a whole number" }).min(min, { error: `must be at least ${min}` }))
    .default(meta.default)
    // Documented as what it accepts, an integer, not as the JSON-or-string union that parses it.
    .meta({
      description: meta.description,
      override: ({ jsonSchema }) => {
        delete jsonSchema.anyOf;
        Object.assign(jsonSchema, { type: "integer", minimum: min, default: meta.default });
      },
    });

/** Most messages one history or poll page returns; larger limits are clamped to it. */
export const MAX_PAGE = 100;

export const sendInput = (maxLength: number) =>
  z.object({ phone: phoneSchema, message: messageTextSchema(maxLength) });

export const inboundInput = (maxLength: number) =>
  z.object({
    phone: phoneSchema,
    message: messageTextSchema(maxLength),
    id: z
      .string(typeError("a string"))
      .min(1, { error: "must not be empty" })
      .max(255, { error: "must be at most 255 characters" })
      .optional()
      .meta({ description: "The network's own id of the message; the same id twice stores one message." }),
  });

// Query and path values arrive as strings over REST.
export const historyInput = z.object({
  phone: z
    .string(typeError("a string"))
    .transform(phoneFromPath)
    .pipe(phoneSchema)
    .meta({ description: "E.164 phone number, raw (+1415…) or percent-encoded (%2B1415…)", example: "+14155550123" }),
  limit: wholeNumber(1, { default: 50, description: `Page size, default 50; above ${MAX_PAGE} it is clamped to ${MAX_PAGE} (the answer's limit says so).` }),
  offset: wholeNumber(0, { default: 0, description: "Messages skipped, newest first, for the next page." }),
});

export const pollInput = z.object({
  since: z
    .string(typeError("a string"))
    .transform((value, ctx) => {
      const us = parseIsoInstant(value);
      if (us === null) {
        ctx.addIssue({ code: "custom", message: "must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.123456Z" });
        return z.NEVER;
      }
      return us;
    })
    .meta({
      description:
        "Exclusive: only messages stored after this ISO 8601 date-time (without a zone it is UTC; any precision, read to the microsecond). Pass the timestamp of the last message you got. Omitted: from the first inbound message ever stored.",
      example: "2026-11-21T09:30:00.123456Z",
    })
    .optional(),
  phone: z
    .string(typeError("a string"))
    .transform(phoneFromQuery)
    .pipe(phoneSchema)
    .meta({
      description: "Only messages from this E.164 phone number. Encode the + as %2B; an unencoded + arrives as a space and is read back as +.",
      example: "+14155550123",
    })
    .optional(),
  limit: wholeNumber(1, { default: MAX_PAGE, description: `Most messages returned, default and maximum ${MAX_PAGE}; more is clamped to ${MAX_PAGE}.` }),
});

export const messageRecord = z
  .object({
    id: z.string(),
    phone: z.string(),
    message: z.string(),
    direction: z.enum(["outbound", "inbound"]),
    timestamp: z.string().meta({ description: "ISO 8601, UTC, microseconds", example: "2026-11-21T09:30:00.123456Z" }),
    status: z.enum(["queued", "sent", "delivered", "failed", "received"]),
    error: z.string().optional().meta({ description: "Why a failed message failed." }),
  })
  .meta({ id: "Message" });

export const sendOutput = z.object({
  success: z.boolean(),
  message_id: z.string(),
  timestamp: z.string(),
  status: messageRecord.shape.status.optional().meta({ description: "(extension) The message's status when the send was answered." }),
});

export const historyOutput = z.object({
  success: z.boolean(),
  messages: z.array(messageRecord),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const pollOutput = z.object({
  success: z.boolean(),
  messages: z.array(messageRecord),
  count: z.number().int(),
  has_more: z.boolean(),
});

export type MessageRecord = z.infer<typeof messageRecord>;
