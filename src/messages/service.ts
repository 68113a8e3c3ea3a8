import { writeOrRetry } from "../background";
import { AppError } from "../errors";
import { errorText, type Logger } from "../log";
import { allLinesRefusal, lineRefusal, type KeyAuth } from "../auth/policy";
import type { Config } from "../config";
import { chooseLine, fallbackLine } from "../lines/choose";
import type { Line, LineRegistry } from "../lines/registry";
import { NetworkUnreachable, RecipientOptedOut, SendOutcomeUnknown, type OutboundMessage, type SendResult } from "../network/driver";
import type { LineRef, RerouteReason } from "../vocabulary/lines";
import type { OptOutType } from "../vocabulary/messages";
import type { ChatRow, Claim, MediaRow, MessageRepository, MessageRow, NewMessage, RecordRow, Repositories, Storage } from "../db/port";
import { discardMedia, fetchSendMedia, outboundMedia, type KeptMedia, type MediaDeps } from "../media/service";
import type { Recorder } from "../observability/recorder";
import { chatTarget, toChatState, type SendTarget } from "./chats";
import { afterPersonSend, changeMode, handoffOf, type Handoff } from "./modes";
import { asksForPerson, optedOutError, optOutAction } from "./opt-out";
import { sendVerdict } from "./send-policy";
import { directChatId } from "../vocabulary/chats";
import { generatedAnswer, pageAnswer, pollAnswer, sendAnswer, toRecord, toRecords, type SendAnswer } from "./records";
import { MAX_PAGE, type MessageRecord } from "./schemas";
import { stopTypingOnSend } from "./typing";
import { withSpan } from "../observability/trace";

export interface MessagingDeps {
  storage: Storage;
  /** The deployment's lines and their drivers (src/lines). */
  lines: LineRegistry;
  /** The key sending, when a key is: its scopes and reach decide with the rest (./send-policy.ts), its `lines` limit is checked against the line the send takes. */
  key?: Pick<KeyAuth, "id" | "lines" | "scopes" | "reach">;
  /** HANDOFF_MINUTES (absent: its default), for a person's send into a `human` chat. */
  config?: Partial<Pick<Config, "HANDOFF_MINUTES" | "HANDOFF_KEYWORDS">>;
  log: Logger;
  /** Needed only to send or take media. */
  media?: MediaDeps;
  /** Counts messages by the status they reach (absent: not counted). */
  metrics?: Pick<Recorder, "message">;
}

function mediaDeps(deps: { media?: MediaDeps }): MediaDeps {
  if (!deps.media) throw new Error("media: no media store configured");
  return deps.media;
}

/** With an Idempotency-Key: its claim, and the generated text when the request is a generate (its answer is stored with the key). */
export interface IdempotentSend {
  claim: Claim;
  generated?: string;
}

/**
 * What is wrong with `send_at` (ms) at `now` (ms), or undefined: it must be after now and
 * at most one calendar year ahead.
 */
export function sendAtProblem(sendAt: number, now: number): string | undefined {
  if (sendAt <= now) return "must be in the future";
  const yearAhead = new Date(now);
  yearAhead.setUTCFullYear(yearAhead.getUTCFullYear() + 1);
  if (sendAt > yearAhead.getTime()) return "must be at most 1 year ahead";
  return undefined;
}

/** The message an input's `field` (`reply_to`…) names: one of ours in the same conversation (the contact's direct chat, or the group), else 400. */
export async function conversationMessage(messages: MessageRepository, to: string | SendTarget, id: string, field: string): Promise<MessageRow> {
  const named = await messages.get(id);
  if (!named) throw new AppError("BAD_REQUEST", `${field}: no message with this id`);
  const group = typeof to === "string" ? undefined : to.group;
  if (group ? named.chatId !== group.id : named.chatId !== null || named.phone !== (typeof to === "string" ? to : to.phone)) {
    throw new AppError("BAD_REQUEST", `${field}: that message is with another ${group ? "chat" : "contact"}`);
  }
  return named;
}

/** The answer to a send whose outcome is unknown (504, with the message's id). */
export const UNKNOWN_OUTCOME = "network: no answer in time; the status will follow";

/**
 * Sends a message to `phone`, or into the chat `chat_id` (src/messages/chats.ts chatTarget: a
 * direct chat is its contact's phone; a group needs a network with groups). Refused first: a
 * contact that opted out (FORBIDDEN, nothing stored; in a group an opt-out mutes only
 * automated sends), a `reply_to` that is not a message of the same chat (BAD_REQUEST), a
 * `send_at` not ahead. Then its media is fetched and kept (a file that cannot be had refuses the send),
 * the message stored `queued` so a crash never loses it, and handed to the network
 * (sendStored). With `send_at` (µs since the epoch) it is stored `scheduled` and answered
 * so; the scheduled sender (src/messages/scheduled.ts) sends it through sendStored when its
 * time comes. A refusal by the network leaves it `failed` in history and throws
 * BAD_GATEWAY (FORBIDDEN when the network says the recipient unsubscribed: the contact is
 * then opted out). When the outcome is unknown it stays `queued` and GATEWAY_TIMEOUT names
 * the message. Once the network took it, the send succeeded: a status that cannot be
 * written now (a busy database) is written in the background until it lands.
 */
export function sendMessage(
  deps: MessagingDeps,
  input: { phone?: string; chat_id?: string; message?: string; media?: readonly { url: string }[]; reply_to?: string; send_at?: number; line?: string } & SendWho,
  idempotent?: IdempotentSend,
): Promise<MessageRecord> {
  return withSpan("send", { "textwire.media": input.media?.length ?? 0, "textwire.scheduled": input.send_at !== undefined }, () => send(deps, input, idempotent));
}

async function send(deps: MessagingDeps, input: Parameters<typeof sendMessage>[1], idempotent?: IdempotentSend): Promise<MessageRecord> {
  // Checked here, not in the schema: a retry with the same Idempotency-Key after that time replays.
  const sendAt = input.send_at === undefined ? undefined : Math.ceil(input.send_at / 1000);
  const problem = sendAt === undefined ? undefined : sendAtProblem(sendAt, Date.now());
  if (problem) throw new AppError("BAD_REQUEST", `send_at: ${problem}`);
  // The input schema lets exactly one of the two through.
  const target: SendTarget = input.chat_id !== undefined ? await chatTarget(deps, input.chat_id) : { phone: input.phone! };
  return sendTo(deps, target, { ...input, sendAt }, idempotent);
}

/** Whose send it is (docs/supervision.md): `automated` (a workflow's, generate's with auto_send, MCP's); `handoff`: a person's that takes the chat over. */
export interface SendWho {
  automated?: boolean | undefined;
  handoff?: boolean | undefined;
}

/**
 * sendMessage once its target is known (a phone, or a group chat) and `sendAt` checked (ms):
 * the checks that need the target, the decision (./send-policy.ts: send, draft, or refused),
 * storing, then sendStored; `via` replaces the network's `send` (a group's first message
 * creates it). A draft is stored `draft` (event `message.drafted`) and goes nowhere until a
 * person approves it (./drafts.ts). A person's send may hand the chat over (./modes.ts).
 */
export async function sendTo(
  deps: MessagingDeps,
  target: SendTarget,
  input: { message?: string; media?: readonly { url: string }[]; reply_to?: string; sendAt?: number | undefined; line?: string | undefined } & SendWho,
  idempotent?: IdempotentSend,
  via?: (message: OutboundMessage) => Promise<SendResult>,
): Promise<MessageRecord> {
  const { sendAt } = input;
  const replied = input.reply_to === undefined ? undefined : await conversationMessage(deps.storage.messages, target, input.reply_to, "reply_to");
  // Before any file is fetched: a refused send costs nothing.
  const contact = target.group ? { ourTyping: false, optedOut: false } : await deps.storage.contacts.beforeSend(target.phone);
  const { ourTyping } = contact;
  const automated = input.automated === true;
  const verdict = await sendVerdict(deps.storage, target.group ? { phone: "", groupId: target.group.id } : { phone: target.phone }, { automated, key: deps.key, handoff: input.handoff }, contact);
  if (verdict.action === "skip" || verdict.action === "refuse") throw verdict.error;
  const drafted = verdict.action === "draft";
  // A group lives on its line; a reply goes out on the line of what it answers (src/lines/route.ts).
  const chosen = await chooseLine(deps, { line: input.line, replyLine: target.group?.lineId ?? replied?.lineId, stickyLine: contact.lineId }, target.group ? undefined : target.phone);
  const { line } = chosen;
  const refused = deps.key && lineRefusal(deps.key, line.row.id);
  if (refused) throw refused;
  // Media is fetched and kept before anything is stored: a file that cannot be had refuses the send.
  const kept = input.media?.length ? await fetchSendMedia(mediaDeps(deps), input.media.map((m) => m.url), deps.log) : [];
  const message: NewMessage = {
    id: Bun.randomUUIDv7(),
    phone: target.phone,
    chatId: target.group?.id ?? null,
    body: input.message ?? "",
    direction: "outbound",
    status: drafted ? "draft" : sendAt === undefined ? "queued" : "scheduled",
    network: line.row.network,
    lineId: line.row.id,
    networkId: null,
    replyTo: replied?.id ?? null,
    ...(sendAt === undefined ? {} : { sendAt }),
    ...(kept.length ? { media: kept.map(({ sourceUrl: _, ...m }) => m) } : {}),
  };
  const { storage } = deps;
  const keptRows = (messageId: string) => kept.map((m, position) => ({ ...m, messageId, position, createdAt: 0 }));
  let row: MessageRow;
  const by = deps.key?.id ?? null;
  try {
    // With a key, the key names its message in the same transaction: a retry finds one or the other, never half. A draft's event too.
    ({ row } =
      idempotent || drafted
        ? await storage.transaction(async (tx) => {
            const stored = await tx.messages.insert(message);
            if (drafted) await tx.events.append("message.drafted", { messageId: stored.row.id, data: { by } });
            if (!idempotent) return stored;
            const record = toRecord(stored.row, keptRows(stored.row.id));
            const answer = idempotent.generated === undefined ? sendAnswer(record) : generatedAnswer(idempotent.generated, record.id, !drafted, record.timestamp);
            await tx.idempotency.attach(idempotent.claim, stored.row.id, JSON.stringify(answer));
            return stored;
          })
        : await storage.messages.insert(message));
  } catch (err) {
    await discardMedia(mediaDeps(deps), kept, deps.log).catch(() => undefined);
    throw err;
  }
  deps.metrics?.message("outbound", row.network, row.status);
  if (chosen.rerouted) await recordReroute(deps, row, chosen.rerouted.from, line, chosen.rerouted.reason);
  // A person's send: it may take the chat over, and in a human chat restarts its time (the direct chat exists once its message is stored).
  if (!automated && verdict.action === "send") await afterPersonSend(deps, target.group?.id ?? directChatId(target.phone), verdict, by);
  if (row.status === "scheduled" || drafted) return toRecord(row, keptRows(row.id));
  return sendStored(deps, row, ourTyping, { media: kept, replied, group: target.group }, via);
}

/** Event `message.rerouted`: the send goes through `to`, the fallback of `from` (docs/lines.md). */
async function recordReroute(deps: Pick<MessagingDeps, "storage" | "log">, row: MessageRow, from: Line, to: Line, reason: RerouteReason): Promise<void> {
  deps.log.info("a send went through its line's fallback", { messageId: row.id, from: from.row.name, to: to.row.name, reason });
  await writeOrRetry("recording a rerouted send", () => deps.storage.events.append("message.rerouted", { messageId: row.id, data: { from_line: from.row.id, to_line: to.row.id, reason } }), deps.log.child({ messageId: row.id }));
}

/** The line a stored message goes out on: its own, as routing chose it. */
export const lineOf = (deps: Pick<MessagingDeps, "lines">, row: Pick<MessageRow, "lineId">): Line => deps.lines.get(row.lineId);

/** POST /api/send, and a workflow's keyed send: sendMessage, answered as the API answers it (src/messages/records.ts). */
export async function sendAnswered(deps: MessagingDeps, input: Parameters<typeof sendMessage>[1], claim?: Claim): Promise<SendAnswer> {
  return sendAnswer(await sendMessage(deps, input, claim && { claim }));
}

/**
 * The network half of every send, immediate or scheduled: hands a stored `queued` message
 * to the network, with its files and the message it replies to (`known`: as sendMessage
 * has them; else read from the database), and records what came of it (sendMessage says how).
 * `ourTyping`: our typing indicator to the contact was on when the send was checked (in a
 * group, the group's row says: as sendMessage read it, else read here). `via`:
 * what takes the message instead of the network's `send` (createGroup's chat/new).
 */
export async function sendStored(
  deps: MessagingDeps,
  row: MessageRow,
  ourTyping: boolean,
  known?: { media: readonly (KeptMedia | MediaRow)[]; replied: MessageRow | undefined; group: ChatRow | undefined },
  via?: (message: OutboundMessage) => Promise<SendResult>,
): Promise<MessageRecord> {
  const { storage } = deps;
  const files = known?.media ?? (row.mediaCount > 0 ? ((await storage.messages.mediaOf([row.id])).get(row.id) ?? []) : []);
  const rows: MediaRow[] = files.map((m, position) => ("messageId" in m ? m : { ...m, messageId: row.id, position, createdAt: 0 }));
  const shown = (r: RecordRow) => toRecord(r, rows);
  let result: SendResult;
  let group: ChatRow | undefined;
  let line = lineOf(deps, row);
  try {
    // A network that threads gets the replied message's own id, when it went through the same line.
    const replied = row.replyTo ? (known ? known.replied : await storage.messages.get(row.replyTo)) : undefined;
    const threadOn = replied?.lineId === row.lineId ? replied.networkId : null;
    // A group: as sendMessage has it, else read (a scheduled send).
    group = row.chatId === null ? undefined : (known?.group ?? (await storage.chats.get(row.chatId)));
    const chat = group?.networkId ?? undefined;
    const message: OutboundMessage = {
      id: row.id,
      phone: row.phone,
      ...(chat ? { chat } : {}),
      text: row.body,
      ...(files.length ? { media: outboundMedia(mediaDeps(deps), files) } : {}),
      ...(threadOn ? { replyTo: threadOn } : {}),
    };
    // Disabled since the message was stored (a scheduled send): it fails, as it cannot go out there.
    if (!line.row.enabled) throw new AppError("CONFLICT", `line: the line ${line.row.name} is disabled`);
    const sendOn = (on: Line) =>
      withSpan("network.send", { "textwire.network": on.row.network, "textwire.line": on.row.id, "textwire.message.id": row.id }, () => (via ?? ((m: OutboundMessage) => on.driver.send(m)))(message));
    try {
      result = await sendOn(line);
    } catch (err) {
      // A refused connection sent nothing: the line's fallback takes it, once (docs/lines.md). Never after a timeout.
      const fallback = err instanceof NetworkUnreachable && !via && !group ? fallbackLine(deps.lines, line) : undefined;
      if (!fallback) throw err;
      await storage.transaction(async (tx) => {
        await tx.lines.moveMessage(row.id, fallback.row.id, fallback.row.network);
        await tx.lines.moveDirectChat(row.id, fallback.row.id);
      });
      await recordReroute(deps, row, line, fallback, "unreachable");
      row = { ...row, lineId: fallback.row.id, network: fallback.row.network };
      line = fallback;
      result = await sendOn(line);
    }
  } catch (err) {
    if (err instanceof SendOutcomeUnknown) {
      // The message may still go out: it stays queued until the network's report or a
      // reconciliation settles it (docs/networks.md). An echo may already have done so.
      const now = await storage.messages.get(row.id);
      if (now && (now.status === "sent" || now.status === "delivered")) return shown(now);
      throw new AppError("GATEWAY_TIMEOUT", UNKNOWN_OUTCOME, {}, { message_id: row.id });
    }
    // A network that failed (BAD_GATEWAY) is answered naming the line; the record keeps that same error.
    const named = err instanceof AppError && err.code === "BAD_GATEWAY" ? new AppError("BAD_GATEWAY", `line ${line.row.name}: ${err.message}`, err.headers, err.details) : undefined;
    const reason = named ? named.message : errorText(err);
    await recordStatus(deps, row.id, () => storage.messages.setStatus(row.id, "failed", { error: reason }));
    deps.metrics?.message("outbound", row.network, "failed");
    if (err instanceof RecipientOptedOut) {
      // The network keeps its own opt-out list (Twilio's 21610): the contact is opted out here too.
      await writeOrRetry("recording an opt-out", () => storage.contacts.setOptedOut(row.phone, true), deps.log.child({ messageId: row.id }));
      throw optedOutError();
    }
    // A driver's AppError says what went wrong (an invalid recipient, the network's rate limit).
    if (named) throw named;
    if (err instanceof AppError) throw err;
    throw new AppError("BAD_GATEWAY", `line ${line.row.name}: the ${line.row.network} network did not take the message: ${reason}`);
  }
  if (group ? group.ourTyping : ourTyping) await stopTypingOnSend(deps, row);
  let moved = false;
  const recorded = await recordStatus(deps, row.id, async () => {
    moved = await storage.messages.setStatus(row.id, result.status, { networkId: result.networkId ?? null });
  });
  if (moved) deps.metrics?.message("outbound", row.network, result.status);
  // Moved: the record is the stored row with the network's status, no need to read it back.
  // Not moved: a status report got there first; answer what it wrote.
  const settled = recorded && !moved ? await storage.messages.get(row.id) : undefined;
  return shown(settled ?? { ...row, status: result.status });
}

/** Writes a send's status now, or else in the background until it lands; true when written now. */
function recordStatus(deps: MessagingDeps, id: string, write: () => Promise<unknown>): Promise<boolean> {
  return writeOrRetry("recording a send's status", write, deps.log.child({ messageId: id }));
}

/**
 * Stores a message the network delivered to us (`chatId`: in that group chat, `phone` its
 * sender); the same network id twice stores it once. An opt-out or opt-in keyword
 * (src/messages/opt-out.ts) changes the contact's opt-out in the same transaction as the
 * message, and in a group also mutes (or, from the same participant, unmutes) automated
 * sends to it; a duplicate changes nothing. A text that asks for a person (HANDOFF_KEYWORDS)
 * makes its chat `human` in the same transaction (./modes.ts), with event `chat.handoff_requested`.
 */
export async function recordInbound(
  storage: Storage,
  on: LineRef,
  input: { phone: string; message: string; networkId?: string; optOutType?: OptOutType; replyTo?: string; media?: readonly KeptMedia[]; chatId?: string },
  handoff: Handoff = handoffOf(undefined),
): Promise<{ record: MessageRecord; duplicate: boolean }> {
  const media = input.media ?? [];
  const action = optOutAction(input.message, input.optOutType);
  const asks = !action && asksForPerson(input.message, handoff.keywords);
  const store = async (repos: Repositories) => {
    const stored = await repos.messages.insert({
      id: Bun.randomUUIDv7(),
      phone: input.phone,
      body: input.message,
      direction: "inbound",
      status: "received",
      network: on.network,
      lineId: on.id,
      networkId: input.networkId ?? null,
      optOutType: input.optOutType ?? null,
      replyTo: input.replyTo ?? null,
      chatId: input.chatId ?? null,
      ...(media.length ? { media: media.map(({ sourceUrl: _, ...m }) => m) } : {}),
    });
    if (action && stored.created) {
      await repos.contacts.setOptedOut(input.phone, action === "out");
      if (input.chatId) await (action === "out" ? repos.chats.mute(input.chatId, input.phone) : repos.chats.unmute(input.chatId, input.phone));
    }
    if (asks && stored.created) {
      const { chat } = await changeMode(repos, input.chatId ?? directChatId(input.phone), "human", null, handoff.forMs);
      await repos.events.append("chat.handoff_requested", { data: { chat: toChatState(chat), message_id: stored.row.id, phone: input.phone, by: null } });
    }
    return stored;
  };
  // Only keyword messages need the transaction; the others are one insert.
  const { row, created } = action || asks ? await storage.transaction(store) : await store(storage);
  if (!created) return { record: (await toRecords(storage.messages, [row]))[0]!, duplicate: true };
  return { record: toRecord(row, media.map((m, position) => ({ ...m, messageId: row.id, position, createdAt: 0 }))), duplicate: false };
}

/** The line a `line` filter names (id or name), or 400; undefined when none is given. */
export function lineFilter(lines: LineRegistry, ref: string | undefined): string | undefined {
  if (ref === undefined) return undefined;
  const line = lines.find(ref);
  if (!line) throw new AppError("BAD_REQUEST", `line: no line ${JSON.stringify(ref)} (GET /api/lines lists them)`);
  return line.row.id;
}

type ReadDeps = { storage: Pick<Storage, "messages">; lines: LineRegistry; key?: Pick<KeyAuth, "lines"> };

/** The line a read is narrowed to: `line` (id or name; 400 unknown), which a key limited to lines must name and may use (403). */
function readLine(deps: ReadDeps, ref: string | undefined): string | undefined {
  const lineId = lineFilter(deps.lines, ref);
  const refused = deps.key && (lineId === undefined ? allLinesRefusal(deps.key) : lineRefusal(deps.key, lineId));
  if (refused) throw refused;
  return lineId;
}

/** One contact's messages (on every line, or on `line`), newest first; `limit` is clamped to 100. */
export async function listHistory(deps: ReadDeps, input: { phone: string; limit: number; offset: number; line?: string | undefined }) {
  const { messages } = deps.storage;
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = await messages.history(input.phone, limit, input.offset, readLine(deps, input.line));
  return pageAnswer(await toRecords(messages, rows), total, limit, input.offset);
}

/** Inbound messages after `since` (exclusive; omitted: from the first), oldest first; of direct chats only unless `chats` is `all`; on `line` only when given. */
export async function pollInbound(deps: ReadDeps, input: { since?: number; phone?: string; limit: number; chats?: "direct" | "all"; line?: string | undefined }) {
  const { messages } = deps.storage;
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, hasMore } = await messages.inboundAfter(input.since ?? -1, limit, input.phone, input.chats === "all", readLine(deps, input.line));
  return pollAnswer(await toRecords(messages, rows), hasMore);
}
