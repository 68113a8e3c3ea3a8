import { z } from "zod";
import { AppError, parseInput } from "../errors";
import { generateInput } from "../generator/schemas";
import type { Logger } from "../log";
import { MAX_PAGE, phoneSchema, reactInput, sendInput } from "../messages/schemas";
import { isoTime, parseIsoInstant } from "../messages/time";
import { microClock } from "../vocabulary/time";
import type { MessagingBackend } from "./backend";
import type { NetworkInfo, PolledMessage, SentMessage, WorkflowContext } from "./define";
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
  const send = async (input: { phone: string; message?: string; media?: { url: string }[]; reply_to?: string }, idempotency?: { key: string; anyText: boolean }) => {
    live();
    // A workflow sends to a phone: the schema's other target (chat_id) is not in its input.
    const valid = { ...parseInput(sendInput(opts.maxMessageLength), input), phone: input.phone };
    const shown = { phone: valid.phone, message: valid.message ?? "" };
    let sent: SentMessage;
    if (dryRun) {
      sent = { id: `dry-run-${++dryIds}`, ...shown, media: [], timestamp: isoTime(microClock()), status: "queued", dryRun: true, replayed: false };
    } else {
      const { record, replayed } = await backend.send(valid, idempotency);
      sent = { ...shown, media: [], ...record, dryRun: false, replayed };
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
      const { messages } = await backend.poll({ since: track.cursor, phone, limit });
      for (const m of messages) track.handled.add(m.id);
      // A filtered poll is a view: moving the cursor past it would skip other contacts.
      if (!phone && messages.length) track.cursor = parseIsoInstant(messages[messages.length - 1]!.timestamp) ?? track.cursor;
      // A default poll is of direct chats: every inbound message there has its contact's phone.
      return messages as PolledMessage[];
    },
    async history(phone, o = {}) {
      live();
      return backend.history({
        phone: parseInput(phoneSchema, phone),
        limit: Math.min(Math.max(1, Math.floor(o.limit ?? 50)), MAX_PAGE),
        offset: Math.max(0, Math.floor(o.offset ?? 0)),
      });
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
      return send({ phone: inbound.phone, message, reply_to: inbound.id }, { key: replyKey(workflow, inbound.id), anyText: true });
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
