import { z } from "zod";
import { CHAT_KINDS } from "../vocabulary/chats";
import { CHAT_MODES } from "../vocabulary/chat-modes";
import { chatIdField, MAX_PAGE, messageRecord, messageTextSchema, phoneInPath, phoneSchema, typeError, wholeNumber } from "./schemas";

/** A chat id (`dm_…` or `grp_…`) in a path; whether it exists is the service's to say. A new schema each use (trpc-to-openapi changes schemas in place). */
const chatIdInPath = () => chatIdField.meta({ description: "A chat's id (GET /api/chats)." });

export const chatRecord = z
  .object({
    id: z.string().meta({ example: "grp_0b5e4f7c2d1a49e8b6c3a2f1e0d9c8b7" }),
    kind: z.enum(CHAT_KINDS).meta({ description: "`direct`: one contact (the spec's per-phone history); `group`: a group chat." }),
    name: z.string().nullable().meta({ description: "The group's name; null when the network has none (and for direct chats)." }),
    participants: z.array(z.string()).meta({ description: "E.164 numbers of the other people in it, without us.", example: ["+14155550123", "+14155550124"] }),
    created_at: z.string().meta({ description: "When Textwire first saw it (ISO 8601, UTC, microseconds).", example: "2026-11-21T09:30:00.123456Z" }),
    last_message_at: z.string().nullable().meta({ description: "Its newest message's timestamp; null when it has none.", example: "2026-11-21T09:30:00.123456Z" }),
    muted: z.boolean().meta({
      description:
        "A group whose participant replied STOP there: automated sends to it (workflows, generate with auto_send) are refused until that participant replies START; API sends still go. Always false for a direct chat (its contact's opt-out: GET /api/contacts/{phone}).",
    }),
    mode: z.enum(CHAT_MODES).meta({
      description:
        "Who answers (docs/supervision.md): `auto`, automations send; `supervised`, their sends become drafts a person approves (GET /api/drafts); `human`, a person owns it and automations send nothing. DEFAULT_CHAT_MODE unless set (PATCH /api/chats/{id}).",
    }),
    previous_mode: z.enum(CHAT_MODES).nullable().meta({ description: "A `human` chat's mode before it, which it returns to at `human_until`; null otherwise." }),
    human_until: z.string().nullable().meta({
      description: "When a `human` chat returns to `previous_mode`: HANDOFF_MINUTES after the last person's send (ISO 8601, UTC); null otherwise.",
      example: "2026-11-21T10:30:00.000000Z",
    }),
    unread: z.number().int().meta({
      description: "Its inbound messages not marked read (POST /api/chats/{id}/read); a direct chat's are its contact's (`unread` of GET /api/contacts/{phone}).",
      example: 2,
    }),
  })
  .meta({ id: "Chat" });

export type ChatRecord = z.infer<typeof chatRecord>;

/** The chat as event `chat.updated` carries it: the record without `unread`, which is the reader's, not the change's. */
export const chatState = chatRecord.omit({ unread: true }).meta({ id: "ChatState" });
export type ChatState = z.infer<typeof chatState>;

export const chatInput = () => z.object({ id: chatIdInPath() });
export const chatOutput = z.object({ success: z.boolean(), chat: chatRecord });

export const chatsInput = z.object({
  kind: z.enum(CHAT_KINDS, { error: `must be one of ${CHAT_KINDS.join(", ")}` }).meta({ description: "Only chats of this kind: direct or group." }).optional(),
  limit: wholeNumber(1, { default: 50, description: `Page size, default 50; above ${MAX_PAGE} it is clamped to ${MAX_PAGE} (the answer's limit says so).` }),
  offset: wholeNumber(0, { default: 0, description: "Chats skipped, latest activity first, for the next page." }),
});

export const chatsOutput = z.object({
  success: z.boolean(),
  chats: z.array(chatRecord),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const chatMessagesInput = chatInput().extend({
  limit: wholeNumber(1, { default: 50, description: `Page size, default 50; above ${MAX_PAGE} it is clamped to ${MAX_PAGE} (the answer's limit says so).` }),
  offset: wholeNumber(0, { default: 0, description: "Messages skipped, newest first, for the next page." }),
});

const participantsSchema = z
  .array(phoneSchema, typeError("an array of E.164 phone numbers"))
  .min(2, { error: "must hold at least 2 phone numbers (a chat with one is a direct chat: POST /api/send)" })
  .max(32, { error: "must hold at most 32 phone numbers" })
  .refine((phones) => new Set(phones).size === phones.length, "must not repeat a phone number")
  .meta({ description: "The other people of the group (E.164), at least 2.", example: ["+14155550123", "+14155550124"] });

const groupName = z
  .string(typeError("a string"))
  .trim()
  .min(1, { error: "must not be empty" })
  .max(100, { error: "must be at most 100 characters" })
  .meta({ description: "The group's name.", example: "Weekend plans" });

export const createChatInput = (maxLength: number) =>
  z.object({
    participants: participantsSchema,
    name: groupName.optional(),
    message: messageTextSchema(maxLength).meta({ description: "The group's first message: a group is created by sending it." }),
  });

export const createChatOutput = z.object({ success: z.boolean(), chat: chatRecord, message: messageRecord });

export const updateChatInput = chatInput()
  .extend({
    name: groupName.optional(),
    mode: z.enum(CHAT_MODES, { error: `must be one of ${CHAT_MODES.join(", ")}` }).optional().meta({ description: "The chat's new mode (docs/supervision.md); back from `human` by hand, too." }),
  })
  .refine((input) => input.name !== undefined || input.mode !== undefined, { path: ["name"], message: "name or mode is required" });

export const participantInput = chatInput().extend({ phone: phoneSchema.meta({ description: "The participant to add (E.164).", example: "+14155550125" }) });
export const participantInPathInput = chatInput().extend({ phone: phoneInPath() });
