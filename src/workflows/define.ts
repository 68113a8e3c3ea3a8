import { Cron } from "croner";
import { z } from "zod";
import { AppError } from "../errors";
import type { ContextTurn } from "../generator/prompt";
import type { Logger } from "../log";
import type { MessageRecord } from "../messages/schemas";
import type { NetworkCapabilities } from "../vocabulary/network";
import type { Reaction } from "../vocabulary/reactions";
import type { SkipReason } from "../vocabulary/chat-modes";

export type { ContextTurn } from "../generator/prompt";
export type { MessageRecord } from "../messages/schemas";
export type { NetworkCapabilities } from "../vocabulary/network";
export type { Reaction } from "../vocabulary/reactions";
export type { ChatMode, SkipReason } from "../vocabulary/chat-modes";

/** Which group messages `ctx.poll()` returns besides direct ones: none (the default), those that mention us, or all. */
export const GROUPS_MODES = ["off", "mentions", "all"] as const;
export type GroupsMode = (typeof GROUPS_MODES)[number];

/**
 * A polled message: an inbound one, so its `phone` is who sent it (in a direct chat the
 * contact, in a group the participant). `chat_id` is its chat (`dm_…` or `grp_…`).
 */
export type PolledMessage = MessageRecord & {
  phone: string;
  /** True when it was written in a group chat (only with the workflow's `groups` "mentions" or "all"). */
  group: boolean;
  /** Its text names us: one of MENTION_PATTERNS as a whole word, any case (computed in direct chats too). */
  mentioned: boolean;
};

/** The network this deployment runs on, as GET /api/network answers it. */
export interface NetworkInfo {
  name: string;
  capabilities: NetworkCapabilities;
}

/** What `send` and `reply` return: the stored message (sent, or a draft), or in a dry run what would have been sent. */
export interface SentMessage {
  id: string;
  /** The same as `id`. */
  message_id: string;
  /** True when the chat is `supervised`: the message is a draft a person approves or rejects; nothing went out (docs/supervision.md). */
  drafted: boolean;
  /** The contact; empty for a send into a group (`chat_id`). */
  phone: string;
  /** The group it was sent into, when it was. */
  chat_id?: string;
  /** Empty when only media was sent. */
  message: string;
  /** The files sent, as the message's record shows them (none in a dry run). */
  media: MessageRecord["media"];
  timestamp: string;
  status: MessageRecord["status"];
  /** The message this one answers (`reply`), when any. */
  reply_to?: string;
  /** True when nothing was sent (a dry run). */
  dryRun: boolean;
  /** True when an earlier send with the same key is returned and nothing new was sent. */
  replayed: boolean;
}

/**
 * What `send` and `reply` return when policy refused the send: the contact opted out
 * (`opted_out`), a participant's STOP mutes the group (`muted`), or a person owns the chat
 * (`human`). Nothing was stored and the run goes on (docs/supervision.md).
 */
export interface SkippedSend {
  skipped: SkipReason;
}

/** A send's outcome: sent (or drafted), or skipped (`"skipped" in outcome`). */
export type SendOutcome = SentMessage | SkippedSend;

/** True when a send or reply was skipped by policy (nothing stored). */
export const isSkipped = (outcome: SendOutcome): outcome is SkippedSend => "skipped" in outcome;

export interface WorkflowContext {
  /** Inbound messages after this workflow's cursor, oldest first, but none of a `human` chat (the cursor passes them). Each call continues after the last. */
  poll(opts?: { phone?: string; limit?: number }): Promise<PolledMessage[]>;
  /** One contact's messages, newest first. */
  history(phone: string, opts?: { limit?: number; offset?: number }): Promise<{ messages: MessageRecord[]; total: number }>;
  /** One chat's messages, newest first: a group's (each inbound one's `phone` is its sender) or a direct chat's. */
  chatHistory(chatId: string, opts?: { limit?: number; offset?: number }): Promise<{ messages: MessageRecord[]; total: number }>;
  /** A reply written by the generator (stored, not sent). */
  generate(req: { phone: string; context: ContextTurn[]; instructions?: string; language?: string }): Promise<{ id: string; text: string }>;
  /**
   * Sends a message: text, media (up to 10 `{ url }`, fetched and kept by Textwire) or both;
   * with `idempotencyKey`, at most once per key and workflow. An automated send: in a
   * `supervised` chat it is a draft (`drafted: true`); refused by policy it is `{ skipped }`.
   */
  send(req: ({ phone: string; chat_id?: undefined } | { chat_id: string; phone?: undefined }) & { message?: string; media?: { url: string }[]; idempotencyKey?: string }): Promise<SendOutcome>;
  /**
   * Replies to an inbound message in its chat (`reply_to` is its id: a threaded reply where
   * the network threads): a group message is answered in the group, a direct one to its
   * contact. At most one reply per inbound message, whatever the text, across retries: a reply
   * drafted in a `supervised` chat is that draft on every retry (approving it sends it once).
   */
  reply(inbound: Pick<PolledMessage, "id" | "phone"> & { chat_id?: string }, message: string): Promise<SendOutcome>;
  /**
   * Whether automated sends to the group wait: a participant replied STOP there and not START
   * since. `send` and `reply` into such a group return `{ skipped: "muted" }`. A direct chat is
   * never muted (its contact opts out: `optedOut`).
   */
  muted(chatId: string): Promise<boolean>;
  /** Whether the contact opted out (replied STOP and not START since). `send` and `reply` to such a contact return `{ skipped: "opted_out" }`. */
  optedOut(phone: string): Promise<boolean>;
  /**
   * Reacts (a tapback) to a message of a conversation, ours or the contact's, replacing our
   * previous reaction to it: the message's record. Null in a dry run, which sends nothing.
   */
  react(messageId: string, reaction: Reaction): Promise<MessageRecord | null>;
  /** Starts (`on`) or stops our typing indicator to the contact; a message sent to it stops it too, and it stops by itself after 60 s. */
  typing(phone: string, on: boolean): Promise<void>;
  /** Marks the contact's inbound messages read (`unread` 0), telling the network where it has read receipts. */
  markRead(phone: string): Promise<void>;
  /** Whether the contact is typing now (the network reported it less than 60 s ago and no stop since). */
  isTyping(phone: string): Promise<boolean>;
  /** The network and what it can do; a call for what it cannot do throws UNPROCESSABLE_CONTENT (`isUnsupported(err)`). */
  network: NetworkInfo;
  /** JSON values kept for this workflow between runs. */
  state: {
    get<T = unknown>(key: string): Promise<T | undefined>;
    set(key: string, value: unknown): Promise<void>;
  };
  log: Logger;
  /** Aborted when the run times out or the process shuts down. */
  signal: AbortSignal;
  /** True in a dry run: send, reply, react, typing and markRead change nothing, state and cursor are not saved. */
  dryRun: boolean;
}

export interface Workflow {
  /** Unique: lowercase letters, digits and dashes. */
  name: string;
  /** croner pattern, 5 fields (minute first) or 6 (second first). */
  schedule: string;
  /** IANA zone of the schedule; default UTC. */
  timezone?: string;
  /** One run's time limit; default 60000. */
  timeoutMs?: number;
  /** `generator`: not scheduled when no generator is configured. */
  requires?: "generator"[];
  /** Group messages `ctx.poll()` returns: "off" (default: direct messages only), "mentions" (those that mention us) or "all". */
  groups?: GroupsMode;
  run(ctx: WorkflowContext): Promise<void> | void;
}

/** True for a FORBIDDEN error (403), here or from a remote server: a scope the key lacks (sends refused by opt-outs and mutes are `{ skipped }`, not errors). */
export function isOptedOut(err: unknown): boolean {
  return err instanceof AppError && err.code === "FORBIDDEN";
}

/** True for the error of a ctx call the network cannot do (422 UNPROCESSABLE_CONTENT), here or from a remote server. */
export function isUnsupported(err: unknown): boolean {
  return err instanceof AppError && err.code === "UNPROCESSABLE_CONTENT";
}

/** Only adds types: `export default defineWorkflow({ ... })`. */
export function defineWorkflow(workflow: Workflow): Workflow {
  return workflow;
}

export const DEFAULT_TIMEOUT_MS = 60_000;

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function scheduleProblem(pattern: string): string | null {
  const fields = pattern.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `must have 5 or 6 fields (got ${fields})`;
  try {
    new Cron(pattern, { paused: true }).stop();
    return null;
  } catch (err) {
    return `is not a valid pattern: ${(err as Error).message}`;
  }
}

/** The shape a workflow file's default export must have; messages name the field. */
export const workflowShape = z.object({
  name: z.string({ error: "must be a string" }).regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, "must be lowercase letters, digits and dashes"),
  schedule: z.string({ error: "must be a croner pattern string" }).superRefine((pattern, ctx) => {
    const problem = scheduleProblem(pattern);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  timezone: z.string({ error: "must be a string" }).refine(isTimeZone, "must be an IANA time zone, e.g. Europe/Madrid").optional(),
  timeoutMs: z.number({ error: "must be a number" }).int().positive({ error: "must be a positive whole number" }).optional(),
  requires: z.array(z.literal("generator", { error: 'may only hold "generator"' })).optional(),
  groups: z.enum(GROUPS_MODES, { error: `must be one of ${GROUPS_MODES.map((m) => `"${m}"`).join(", ")}` }).optional(),
  run: z.custom<Workflow["run"]>((v) => typeof v === "function", { error: "must be a function run(ctx)" }),
});
