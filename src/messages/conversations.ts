import { z } from "zod";
import type { MessageRepository } from "../db/port";
import { lineField, messageRecord, typeError, wholeNumber } from "./schemas";
import { toRecords } from "./records";

/** Most conversations one page lists. */
export const MAX_CONVERSATIONS = 200;

// No input at all is the first page (prefault: parsed as `{}`, so limit takes its default).
export const conversationsInput = z
  .object({
    search: z
      .string(typeError("a string"))
      .regex(/^[+\d]*$/, { error: "must hold only digits and '+'" })
      .min(1, { error: "must not be empty" })
      .max(16, { error: "must be at most 16 characters" })
      .optional()
      .meta({ description: "Only phones holding these digits (and '+') anywhere in the number.", example: "4155" }),
    limit: wholeNumber(1, { default: 50, max: MAX_CONVERSATIONS, description: `Most conversations returned, default 50, at most ${MAX_CONVERSATIONS}.` }),
    line: lineField("Only conversations whose newest message is on this line (id or name).").optional(),
  })
  .prefault({});

export const conversationRecord = z
  .object({
    phone: z.string(),
    last_message: messageRecord.meta({ description: "The newest message with this phone, either direction." }),
    opted_out: z.boolean().meta({ description: "The contact opted out (replied STOP): sends to it are refused." }),
    unread: z.number().int().meta({ description: "The contact's inbound messages not marked read." }),
  })
  .meta({ id: "Conversation" });

export const conversationsOutput = z.object({ conversations: z.array(conversationRecord) });

export type ConversationRecord = z.infer<typeof conversationRecord>;

/** One entry per phone with any message, the most recently active first; only those whose newest message is on the line `line` (an id) when given. */
export async function listConversations(messages: MessageRepository, input: { search?: string; limit: number; line?: string }): Promise<ConversationRecord[]> {
  const rows = await messages.conversations({ search: input.search, limit: input.limit, line: input.line });
  const records = await toRecords(messages, rows);
  // Direct chats only: every row's phone is its contact's.
  return records.map((last, i) => ({ phone: rows[i]!.phone, last_message: last, opted_out: rows[i]!.optedOut, unread: rows[i]!.unread }));
}
