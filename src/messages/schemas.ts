import { z } from "zod";
import { MESSAGE_STATUSES } from "../vocabulary/message-status";
import { REACTIONS } from "../vocabulary/reactions";
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
export const wholeNumber = (min: number, meta: { description: string; default: number; max?: number }) =>
  z
    .union([z.number(), z.string().regex(/^\s*-?\d+\s*$/).transform(Number)], typeError("a whole number"))
    .pipe(
      z
        .number()
        .int({ error: "must be a whole number" })
        .min(min, { error: `must be at least ${min}` })
        .max(meta.max ?? Number.MAX_SAFE_INTEGER, { error: `must be at most ${meta.max}` }),
    )
    .default(meta.default)
    // Documented as what it accepts, an integer, not as the JSON-or-string union that parses it.
    .meta({
      description: meta.description,
      override: ({ jsonSchema }) => {
        delete jsonSchema.anyOf;
        Object.assign(jsonSchema, { type: "integer", minimum: min, default: meta.default, ...(meta.max === undefined ? {} : { maximum: meta.max }) });
      },
    });

/** An ISO 8601 date-time as microseconds since the epoch (without a zone it is UTC; digits beyond µs dropped). */
export const isoInstant = z.string(typeError("a string")).transform((value, ctx) => {
  const us = parseIsoInstant(value);
  if (us === null) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 date-time, e.g. 2026-11-21T09:30:00.123456Z" });
    return z.NEVER;
  }
  return us;
});

/** When to send a scheduled message, as µs since the epoch (checked against the clock by sendMessage). */
export const sendAtSchema = isoInstant.meta({
  description:
    "Send later: an ISO 8601 date-time (without a zone it is UTC) after now and at most 1 year ahead. The message is stored `scheduled` and sent within about a second of that time (at once after downtime); cancel it with POST /api/messages/{id}/cancel until then.",
  example: "2026-11-21T09:30:00Z",
});

/** Most messages one history or poll page returns; larger limits are clamped to it. */
export const MAX_PAGE = 100;

/** An absolute http(s) URL; where it may point is checked when it is fetched (src/media/fetch.ts). */
function httpUrl(value: string): boolean {
  try {
    return ["http:", "https:"].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** Files to send or deliver: 1 to 10 `{ url }`, each fetched and kept by Textwire. */
export const mediaInput = z
  .array(
    z.object({
      url: z
        .string(typeError("a string"))
        .max(2048, { error: "must be at most 2048 characters" })
        .refine(httpUrl, "must be an absolute https URL, e.g. https://example.com/photo.jpg")
        .meta({ description: "Where Textwire fetches the file: https and a public address (unless ALLOW_PRIVATE_URLS=true); at most 25 MiB.", example: "https://example.com/photo.jpg" }),
    }),
    typeError("an array of { url }"),
  )
  .min(1, { error: "must hold at least 1 file (leave it out to send only text)" })
  .max(10, { error: "must hold at most 10 files" })
  .meta({ description: "Up to 10 files (images, video, audio, PDF…), each fetched and kept by Textwire before the message is stored." });

/**
 * `message` may be left out when `media` is given; one of the two is required. Checked even
 * when other fields are wrong (`when`), so every problem is named at once.
 */
const textOrMedia: [(input: { message?: unknown; media?: unknown }) => boolean, { path: string[]; message: string; when: (p: { value: unknown }) => boolean }] = [
  (input) => input.message !== undefined || input.media !== undefined,
  { path: ["message"], message: "is required (or media)", when: ({ value }) => typeof value === "object" && value !== null },
];

/** An id: of a message of ours, or the network's id of one. */
const idSchema = z
  .string(typeError("a string"))
  .min(1, { error: "must not be empty" })
  .max(255, { error: "must be at most 255 characters" });

/** A message id of ours (`reply_to`): whether it exists, with the same contact, is the service's to say. */
const replyToSchema = (description: string) => idSchema.optional().meta({ description });

const isObject = ({ value }: { value: unknown }) => typeof value === "object" && value !== null;

/** A send goes to a phone or a chat: exactly one of the two, named either way. */
export const phoneOrChat: [(input: { phone?: unknown; chat_id?: unknown }) => boolean, { path: string[]; message: string; when: typeof isObject }][] = [
  [(input) => input.phone !== undefined || input.chat_id !== undefined, { path: ["phone"], message: "is required (or chat_id: exactly one of the two)", when: isObject }],
  [(input) => input.phone === undefined || input.chat_id === undefined, { path: ["chat_id"], message: "cannot be given with phone: give exactly one of phone and chat_id", when: isObject }],
];

/** A chat's id in a body (`chat_id`): whether it exists is the service's to say. */
export const chatIdField = z
  .string(typeError("a string"))
  .regex(/^[A-Za-z0-9_-]{1,64}$/, { error: "must be a chat id (dm_… or grp_…)" })
  .meta({ description: "A chat's id (GET /api/chats): send into that chat, a group's included, instead of to `phone`.", example: "grp_0b5e4f7c2d1a49e8b6c3a2f1e0d9c8b7" });

/** `line` of a request: a line's id or name (GET /api/lines). A new schema each use (trpc-to-openapi changes schemas in place). */
export const lineField = (description: string) => z.string(typeError("a line's id or name")).min(1, { error: "must not be empty" }).meta({ description });

export const sendInput = (maxLength: number) =>
  z
    .object({
      phone: phoneSchema.optional().meta({ description: "E.164 phone number (or `chat_id`: exactly one of the two).", example: "+14155550123" }),
      chat_id: chatIdField.optional(),
      message: messageTextSchema(maxLength).optional(),
      media: mediaInput.optional(),
      reply_to: replyToSchema(
        "The id of a message in the same chat (sent or received) that this one answers. BlueBubbles sends it as a threaded reply; other networks keep it in the record only.",
      ),
      send_at: sendAtSchema.optional(),
      line: lineField("(extension) The line to send through (id or name); left out, routing picks one: a reply's line, the contact's last line, iMessage when the phone has it, else the default (docs/lines.md).").optional(),
      automated: z
        .boolean(typeError("true or false"))
        .optional()
        .meta({
          description:
            "(extension) An automated send (an agent's, a remote worker's): it follows the chat's mode (docs/supervision.md): held as a draft in a `supervised` chat, refused (409) in a `human` one, refused (403) into a group muted by a STOP.",
        }),
      handoff: z
        .boolean(typeError("true or false"))
        .optional()
        .meta({ description: "(extension) A person's send that takes the chat over: an `auto` or `supervised` chat becomes `human`, and automations stay silent there (docs/supervision.md)." }),
    })
    .refine(...phoneOrChat[0]!)
    .refine(...phoneOrChat[1]!)
    .refine(...textOrMedia);

const inboundFields = (maxLength: number) =>
  z.object({
    phone: phoneSchema,
    message: messageTextSchema(maxLength).optional(),
    media: mediaInput.optional(),
    id: idSchema.optional().meta({ description: "The network's own id of the message; the same id twice stores one message." }),
    reply_to: replyToSchema("The id of a message with the same contact that this one answers (a threaded reply)."),
    line: lineField("The loopback line it comes in on (id or name); left out: the default line when it is a loopback line, else the first loopback line.").optional(),
  });

export const inboundInput = (maxLength: number) => inboundFields(maxLength).refine(...textOrMedia);

/** A group chat as the loopback network describes it (its own id, name and the other participants). */
const loopbackChat = z
  .object({
    id: idSchema.meta({ description: "The network's id of the group: the same id is the same chat.", example: "family" }),
    name: z.string(typeError("a string")).max(100, { error: "must be at most 100 characters" }).nullable().optional().meta({ description: "The group's name." }),
    participants: z
      .array(phoneSchema, typeError("an array of E.164 phone numbers"))
      .min(1, { error: "must hold at least 1 phone number" })
      .max(32, { error: "must hold at most 32 phone numbers" })
      .meta({ description: "The group's other people (E.164), without us; the sender is added when missing." }),
  })
  .meta({ description: "A group chat: with a message, the message is in that group and `phone` is its sender; alone, the group as it is now (renamed, participants changed)." });

/** What the loopback webhook simulates besides a message: one of these instead of `message`/`media`. */
const LOOPBACK_KINDS = ["reaction", "typing", "read", "edit", "unsend", "chat"] as const;
// A literal, not z.boolean(): trpc-to-openapi coerces booleans in place, and "false" would become true.
const trueOrFalse = () => z.literal([true, false], { error: "must be true or false" });
/** Fields only a message takes. */
const MESSAGE_ONLY = ["id", "reply_to"] as const;

/**
 * POST /webhooks/loopback: a message (`message` and/or `media`) or exactly one of the
 * contact's reaction, typing, read receipt, edit or unsend. Every other combination is
 * refused naming the field that does not belong.
 */
export const loopbackInput = (maxLength: number) =>
  inboundFields(maxLength)
    .extend({
      reaction: z
        .object({
          message_id: idSchema.meta({ description: "The message reacted to: an id of ours (sent or received) in this conversation." }),
          reaction: reactionSchema,
          remove: trueOrFalse().optional().meta({ description: "true: the contact takes this reaction off." }),
        })
        .optional()
        .meta({ description: "The contact reacts to a message (a tapback), or (`remove`) takes the reaction off." }),
      typing: trueOrFalse().optional().meta({ description: "The contact started (true) or stopped (false) typing." }),
      read: z
        .object({ message_id: idSchema.meta({ description: "One of our messages in this conversation: it and our earlier ones are read." }) })
        .optional()
        .meta({ description: "The contact read our messages up to this one (a read receipt)." }),
      edit: z
        .object({
          id: idSchema.meta({ description: "The network id (`id` when it was delivered) of the contact's message." }),
          message: messageTextSchema(maxLength),
        })
        .optional()
        .meta({ description: "The contact edits one of their messages: its new text." }),
      unsend: z
        .object({ id: idSchema.meta({ description: "The network id (`id` when it was delivered) of the contact's message." }) })
        .optional()
        .meta({ description: "The contact unsends one of their messages." }),
      chat: loopbackChat.optional(),
    })
    .superRefine((input, ctx) => {
      const isMessage = input.message !== undefined || input.media !== undefined;
      // With a message, `chat` says where it is; alone, it is a group change.
      const given = LOOPBACK_KINDS.filter((kind) => input[kind] !== undefined && !(kind === "chat" && isMessage));
      if (!isMessage && given.length === 0) ctx.addIssue({ code: "custom", path: ["message"], message: `is required (or media, or one of ${LOOPBACK_KINDS.join(", ")})` });
      const first = isMessage ? "a message" : given[0];
      for (const kind of isMessage ? given : given.slice(1)) ctx.addIssue({ code: "custom", path: [kind], message: `cannot be given with ${first}` });
      if (!isMessage) for (const field of MESSAGE_ONLY) if (input[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: "is only for a message" });
    });

export type LoopbackInput = z.output<ReturnType<typeof loopbackInput>>;

/** A phone in a REST path (history, contacts): raw or percent-encoded. A new schema each use (trpc-to-openapi changes schemas in place). */
export const phoneInPath = () =>
  z
    .string(typeError("a string"))
    .transform(phoneFromPath)
    .pipe(phoneSchema)
    .meta({ description: "E.164 phone number, raw (+1415…) or percent-encoded (%2B1415…)", example: "+14155550123" });

// Query and path values arrive as strings over REST.
export const historyInput = z.object({
  phone: phoneInPath(),
  line: lineField("(extension) Only messages on this line (id or name); left out: on every line, in one order.").optional(),
  limit: wholeNumber(1, { default: 50, description: `Page size, default 50; above ${MAX_PAGE} it is clamped to ${MAX_PAGE} (the answer's limit says so).` }),
  offset: wholeNumber(0, { default: 0, description: "Messages skipped, newest first, for the next page." }),
});

export const pollInput = z.object({
  since: isoInstant
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
  chats: z
    .enum(["direct", "all"], { error: "must be direct or all" })
    .meta({ description: "`direct` (the default): messages of one-to-one chats only, as the spec's poll; `all`: group messages too (each with its `chat_id`), under the same cursor." })
    .optional(),
  line: lineField("(extension) Only messages that came in on this line (id or name); the cursor is the same.").optional(),
});

/** A file of a message, as its record shows it. */
export const mediaRecord = z
  .object({
    id: z.string().meta({ example: "med_5b1e0c9d8a7f4e3b2c1d0e9f8a7b6c5d" }),
    content_type: z.string().meta({ example: "image/jpeg" }),
    size: z.number().int().meta({ description: "Bytes." }),
    url: z.string().meta({ description: "Where to fetch it: GET with the API key (Range supported).", example: "/api/media/med_5b1e0c9d8a7f4e3b2c1d0e9f8a7b6c5d" }),
  })
  .meta({ id: "Media" });

/** A tapback. */
export const reactionSchema = z.enum(REACTIONS, { error: `must be one of ${REACTIONS.join(", ")}` }).meta({ description: "A tapback.", example: "love" });

/** A reaction standing on a message, as its record shows it. */
export const reactionRecord = z
  .object({
    reaction: z.enum(REACTIONS),
    direction: z.enum(["outbound", "inbound"]).meta({ description: "`outbound`: ours; `inbound`: the contact's." }),
    phone: z.string().nullable().meta({ description: "Who reacted (the contact); null for ours.", example: "+14155550123" }),
    timestamp: z.string().meta({ description: "When it was made (ISO 8601, UTC).", example: "2026-11-21T09:30:00.123000Z" }),
  })
  .meta({ id: "Reaction" });

const momentOrNull = (description: string) => z.string().nullable().meta({ description: `${description} (ISO 8601, UTC); null when not.`, example: "2026-11-21T09:30:00.123000Z" });

export const messageRecord = z
  .object({
    id: z.string(),
    phone: z
      .string()
      .nullable()
      .meta({ description: "The contact (E.164). In a group chat: the sender of an inbound message, null for ours.", example: "+14155550123" }),
    message: z.string(),
    direction: z.enum(["outbound", "inbound"]),
    timestamp: z.string().meta({ description: "ISO 8601, UTC, microseconds", example: "2026-11-21T09:30:00.123456Z" }),
    status: z.enum(MESSAGE_STATUSES),
    error: z.string().optional().meta({ description: "Why a failed message failed." }),
    reply_to: z.string().nullable().meta({ description: "The id of the message this one answers (a threaded reply); null when none." }),
    media: z.array(mediaRecord).meta({ description: "The message's files, in order; empty when none." }),
    send_at: z.string().optional().meta({ description: "A scheduled send's time (ISO 8601, UTC), when it was sent with `send_at`.", example: "2026-11-21T09:30:00.000000Z" }),
    reactions: z.array(reactionRecord).meta({ description: "The reactions standing on it, oldest first: one a person, ours and the contact's; empty when none." }),
    read_at: momentOrNull("When it was read: ours by the contact (the network's read receipt), theirs by us (mark read)"),
    edited_at: momentOrNull("When it was last edited; `message` is the new text"),
    unsent_at: momentOrNull("When it was unsent; `message` is then empty"),
    chat_id: z.string().meta({ description: "The chat it belongs to (GET /api/chats/{id}): a contact's direct chat (`dm_…`) or a group (`grp_…`).", example: "dm_14155550123" }),
    line_id: z.string().meta({ description: "The line it went out or came in on (GET /api/lines); `ln_default` is the environment's line.", example: "ln_default" }),
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

export const scheduledInput = z.object({
  limit: wholeNumber(1, { default: 50, description: `Page size, default 50; above ${MAX_PAGE} it is clamped to ${MAX_PAGE} (the answer's limit says so).` }),
  offset: wholeNumber(0, { default: 0, description: "Messages skipped, soonest first, for the next page." }),
});

export const scheduledOutput = historyOutput;

export const messageIdInput = z.object({
  id: idSchema.meta({ description: "The message's id (`message_id` of POST /api/send).", example: "01a20973-b8dc-74d8-be4d-b76a701b138f" }),
});

export const reactInput = messageIdInput.extend({ reaction: reactionSchema });
export const editInput = (maxLength: number) => messageIdInput.extend({ message: messageTextSchema(maxLength) });

export const approveInput = (maxLength: number) =>
  messageIdInput.extend({ message: messageTextSchema(maxLength).optional().meta({ description: "The text to send instead of the draft's (edited); left out, the draft's own." }) });

export const draftsOutput = z.object({
  success: z.boolean(),
  drafts: z.array(messageRecord),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
});

/** A message as an action on it left it. */
export const messageOutput = z.object({ success: z.boolean(), message: messageRecord });

export const pollOutput = z.object({
  success: z.boolean(),
  messages: z.array(messageRecord),
  count: z.number().int(),
  has_more: z.boolean(),
});

export type MessageRecord = z.infer<typeof messageRecord>;
