import { z } from "zod";
import { AppError, parseInput } from "../errors";
import { generateInput } from "../generator/schemas";
import type { Logger } from "../log";
import { chatIdField, MAX_PAGE, phoneSchema, reactInput, sendInput } from "../messages/schemas";
import { directChatPhone } from "../vocabulary/chats";
import { isoTime, parseIsoInstant } from "../messages/time";
import { microClock } from "../vocabulary/time";
import type { MessagingBackend } from "./backend";
import type { GroupsMode, NetworkInfo, PolledMessage, SendOutcome, SentMessage, WorkflowContext } from "./define";
import type { WorkflowRepository } from "../db/port";
import { getState, setState } from "./store";

/** What one run's context keeps track of, for the runner to commit at the end. */
export interface RunTrack {
  /** Timestamp of the last inbound message an unfiltered poll returned. */
  cursor: number;
  /** Distinct inbound messages polled. */
  handled: Set<string>;
  /** What send and reply sent (or would have, in a dry run). */
  sends: SentMessage[];
}

export function replyKey(workflow: string, inboundId: string): string {
  return `workflow:${workflow}:reply:${inboundId}`;
}

/** A history page as the API pages: `limit` 1 to MAX_PAGE (default 50), `offset` from 0. */
const page = (o: { limit?: number; offset?: number }) => ({
  limit: Math.min(Math.max(1, Math.floor(o.limit ?? 50)), MAX_PAGE),
  offset: Math.max(0, Math.floor(o.offset ?? 0)),
});

const typingInput = z.object({ phone: phoneSchema, on: z.boolean({ error: "must be true or false" }) });

/**
 * The `ctx` of one run, over the same service functions as the API, recording in `track`.
 * Every call checks the run's signal first, so a timed-out or stopped run cannot send
 * anything more.
 */
export function createWorkflowContext(opts: {
  workflow: string;
  backend: MessagingBackend;
  workflows: WorkflowRepository;
  maxMessageLength: number;
  /** The workflow's `groups`: which group messages poll returns. */
  groups: GroupsMode;
  /** Whether a text mentions us (MENTION_PATTERNS). */
  mentioned: (text: string) => boolean;
  track: RunTrack;
  network: NetworkInfo;
  dryRun: boolean;
  signal: AbortSignal;
  log: Logger;
}): WorkflowContext {
  const { workflow, backend, workflows, track, dryRun, signal, log } = opts;
  const dryState = new Map<string, unknown>();
  let dryIds = 0;

  const live = () => {
    if (signal.aborted) throw new AppError("SERVICE_UNAVAILABLE", `run stopped: ${String(signal.reason ?? "aborted")}`);
  };
  /**
   * The one place a workflow's message leaves: to a contact's phone, or into a chat. The send
   * policy (src/messages/send-policy.ts) decides on the server: sent, drafted in a supervised
   * chat, or skipped (an opt-out, a muted group, a human chat), which stores nothing and never
   * fails the run.
   */
  const send = async (
    input: { phone?: string; chat_id?: string; message?: string; media?: { url: string }[]; reply_to?: string },
    idempotency?: { key: string; anyText: boolean },
  ): Promise<SendOutcome> => {
    live();
    const { phone, chat_id, automated: _, handoff: __, ...rest } = parseInput(sendInput(opts.maxMessageLength), input);
    // A direct chat's id is its contact: sent as to the phone, so a reply keeps the key and checks it always had.
    const to = chat_id === undefined ? { phone: phone! } : directChatPhone(chat_id) ? { phone: directChatPhone(chat_id)! } : { chat_id };
    const valid = { ...rest, ...to };
    const shown = { phone: to.phone ?? "", ...(to.chat_id === undefined ? {} : { chat_id: to.chat_id }), message: valid.message ?? "" };
    let sent: SentMessage;
    if (dryRun) {
      const id = `dry-run-${++dryIds}`;
      sent = { id, message_id: id, drafted: false, ...shown, media: [], timestamp: isoTime(microClock()), status: "queued", dryRun: true, replayed: false };
    } else {
      const outcome = await backend.send(valid, idempotency);
      if ("skipped" in outcome) {
        log.info(`send skipped: ${outcome.skipped}`, { ...to, skipped: outcome.skipped });
        return outcome;
      }
      const { record, replayed } = outcome;
      sent = { ...shown, media: [], ...record, message_id: record.id, drafted: record.status === "draft", dryRun: false, replayed };
    }
    track.sends.push(sent);
    return sent;
  };

  /** What a dry run does instead of changing the conversation: says so in the log. */
  const unchanged = (call: string, fields: Record<string, unknown>) => log.info(`dry run: ${call} changed nothing`, fields);

  return {
    async poll(o = {}) {
      live();
      const phone = o.phone === undefined ? undefined : parseInput(phoneSchema, o.phone);
      const limit = Math.min(Math.max(1, Math.floor(o.limit ?? MAX_PAGE)), MAX_PAGE);
      const { messages } = await backend.poll({ since: track.cursor, phone, limit, chats: opts.groups === "off" ? "direct" : "all" });
      // A filtered poll is a view: moving the cursor past it would skip other contacts. Group
      // messages left out ("mentions") are passed like the others: they are never answered.
      if (!phone && messages.length) track.cursor = parseIsoInstant(messages[messages.length - 1]!.timestamp) ?? track.cursor;
      // A chat a person owns is not the workflow's: its messages are passed over (the cursor passes them too).
      const chatIds = [...new Set(messages.flatMap((m) => (m.chat_id ? [m.chat_id] : [])))];
      const modes = chatIds.length ? await backend.chatModes(chatIds) : new Map<string, string>();
      const polled: PolledMessage[] = [];
      for (const m of messages) {
        if (m.chat_id && modes.get(m.chat_id) === "human") continue;
        // Inbound: `phone` is its contact, or in a group its sender. A server older than chats gives no chat_id: direct.
        const group = Boolean(m.chat_id) && directChatPhone(m.chat_id) === undefined;
        const message = { ...m, phone: m.phone!, group, mentioned: opts.mentioned(m.message) };
        if (message.group && opts.groups === "mentions" && !message.mentioned) continue;
        track.handled.add(m.id);
        polled.push(message);
      }
      return polled;
    },
    async history(phone, o = {}) {
      live();
      return backend.history({ phone: parseInput(phoneSchema, phone), ...page(o) });
    },
    async chatHistory(chatId, o = {}) {
      live();
      return backend.chatHistory({ id: parseInput(chatIdField, chatId), ...page(o) });
    },
    async muted(chatId) {
      live();
      const id = parseInput(chatIdField, chatId);
      return directChatPhone(id) === undefined && backend.chatMuted(id);
    },
    async generate(req) {
      live();
      if (!backend.hasGenerator) throw new AppError("SERVICE_UNAVAILABLE", "ctx.generate: generator not configured: set OPENAI_API_KEY");
      const valid = parseInput(generateInput, req);
      return backend.generate(valid, signal);
    },
    send({ idempotencyKey, ...input }) {
      return send(input, idempotencyKey === undefined ? undefined : { key: `workflow:${workflow}:send:${idempotencyKey}`, anyText: false });
    },
    reply(inbound, message) {
      const to = inbound.chat_id === undefined ? { phone: inbound.phone } : { chat_id: inbound.chat_id };
      return send({ ...to, message, reply_to: inbound.id }, { key: replyKey(workflow, inbound.id), anyText: true });
    },
    async optedOut(phone) {
      live();
      return backend.optedOut(parseInput(phoneSchema, phone));
    },
    async react(messageId, reaction) {
      live();
      const valid = parseInput(reactInput, { id: messageId, reaction });
      if (!dryRun) return backend.react(valid.id, valid.reaction);
      unchanged("ctx.react", { messageId: valid.id, reaction: valid.reaction });
      return null;
    },
    async typing(phone, on) {
      live();
      const valid = parseInput(typingInput, { phone, on });
      if (dryRun) unchanged("ctx.typing", valid);
      else await backend.typing(valid.phone, valid.on);
    },
    async markRead(phone) {
      live();
      const valid = parseInput(phoneSchema, phone);
      if (dryRun) unchanged("ctx.markRead", { phone: valid });
      else await backend.markRead(valid);
    },
    async isTyping(phone) {
      live();
      return backend.isTyping(parseInput(phoneSchema, phone));
    },
    network: opts.network,
    state: {
      async get<T>(key: string) {
        live();
        return (dryRun && dryState.has(key) ? dryState.get(key) : await getState(workflows, workflow, key)) as T | undefined;
      },
      async set(key, value) {
        live();
        if (dryRun) dryState.set(key, value);
        else await setState(workflows, workflow, key, value);
      },
    },
    log,
    signal,
    dryRun,
  };
}
