import { z } from "zod";
import { chatIdField, phoneOrChat, phoneSchema, typeError } from "../messages/schemas";
import { isLanguage } from "./language";

export const MAX_CONTEXT_TURNS = 100;
export const MAX_INSTRUCTIONS = 4000;

const contextTurn = z.object({
  role: z.enum(["user", "assistant"], { error: "must be user or assistant" }),
  content: z.string(typeError("a string")).min(1, { error: "must not be empty" }),
});

export const generateInput = z.object({
  phone: phoneSchema,
  context: z
    .array(contextTurn, typeError("an array of { role, content }"))
    .min(1, { error: "must hold at least 1 entry" })
    .max(MAX_CONTEXT_TURNS, { error: `must hold at most ${MAX_CONTEXT_TURNS} entries` })
    .meta({ description: "The conversation so far, oldest first: the contact's turns as user, ours as assistant." }),
  instructions: z
    .string(typeError("a string"))
    .max(MAX_INSTRUCTIONS, { error: `must be at most ${MAX_INSTRUCTIONS} characters` })
    .optional()
    .meta({ description: "Guidance on tone, style or content." }),
  language: z
    .string(typeError("a string"))
    .refine(isLanguage, "must be a BCP 47 tag such as es or a language name such as Spanish")
    .optional()
    .meta({ description: "Language of the reply (BCP 47 tag or name); default: the language of the last user turn.", example: "es" }),
  // A literal, not z.boolean(): trpc-to-openapi coerces booleans in place, and "false" would become true.
  auto_send: z
    .literal([true, false], { error: "must be true or false" })
    .optional()
    .meta({ description: "Send the reply at once (default false)." }),
});

/** POST /api/generate: as generateInput, for a contact (`phone`) or a chat (`chat_id`), exactly one. */
export const generateRequestInput = generateInput
  .extend({
    phone: phoneSchema.optional().meta({ description: "The contact (E.164), or `chat_id`: exactly one of the two.", example: "+14155550123" }),
    chat_id: chatIdField.optional(),
  })
  .refine(...phoneOrChat[0]!)
  .refine(...phoneOrChat[1]!);

export const generateOutput = z.object({
  success: z.boolean(),
  generated_message: z.string(),
  message_id: z.string(),
  sent: z.boolean(),
  timestamp: z.string(),
});
