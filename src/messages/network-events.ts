import type { MessageRepository, MessageRow, Storage } from "../db/port";
import { AppError } from "../errors";
import type { Logger } from "../log";
import { discardMedia, fetchInboundMedia, type KeptMedia, type MediaDeps } from "../media/service";
import { stateKeyOf } from "../lines/drivers";
import type { Line, LineRegistry } from "../lines/registry";
import { webhookEvents, type GroupInfo, type InboundMedia, type WebhookEvents } from "../network/driver";
import type { Recorder } from "../observability/recorder";
import type { LineRef } from "../vocabulary/lines";
import type { OptOutType } from "../vocabulary/messages";
import { applyGroupReport, chatRecordById, groupChat } from "./chats";
import { handoffOf, type Handoff } from "./modes";

/** HANDOFF_KEYWORDS and HANDOFF_MINUTES, where a caller has them (absent: their defaults). */
type HandoffConfig = { HANDOFF_KEYWORDS?: readonly string[]; HANDOFF_MINUTES?: number };
import { applyInboundEdit } from "./edits";
import { isE164 } from "./phone";
import { applyInboundReaction, applyReactionText } from "./reactions";
import { applyReadReceipt } from "./read-state";
import { inboundAnswer, toRecords } from "./records";
import type { LoopbackInput, MessageRecord } from "./schemas";
import { currentRecord, targetOf } from "./network-actions";
import { conversationMessage, recordInbound } from "./service";
import { cleanInboundText } from "./text";
import { applyTyping } from "./typing";

/** Counts messages stored and status moves (absent: not counted). */
type MessageMetrics = Pick<Recorder, "message">;

export interface AppliedEvents {
  /** Inbound messages stored now. */
  stored: number;
  /** Inbound messages already stored (the same network id). */
  duplicates: number;
  /** Reports that moved a message's status. */
  applied: number;
  /** Reports kept but not applied: out of order, after a final status, or about no message of ours. */
  ignored: number;
  /** Reactions, read receipts, edits and typing reports that changed something (SMS reaction texts included). */
  changed: number;
}

/**
 * Stores one inbound message with its media: the files are downloaded first (a message
 * already stored under this network id downloads nothing again), and one that cannot be
 * downloaded is logged and left out, never the message (docs/networks.md).
 */
async function storeInbound(
  storage: Storage,
  on: LineRef,
  input: { phone: string; message: string; networkId?: string; optOutType?: OptOutType; replyTo?: string; media?: readonly InboundMedia[]; chatId?: string },
  log: Logger,
  media: MediaDeps | undefined,
  handoff?: Handoff,
): Promise<{ record: MessageRecord; duplicate: boolean }> {
  const { media: wanted = [], ...message } = input;
  const { network } = on;
  let kept: KeptMedia[] = [];
  if (wanted.length > 0) {
    const stored = message.networkId ? await storage.messages.byNetworkId(network, "inbound", message.networkId) : undefined;
    if (stored) return recordInbound(storage, on, message, handoff);
    if (media) kept = await fetchInboundMedia(media, wanted, log, { network, networkId: message.networkId });
    else log.warn("inbound media not downloaded: no media store", { network, networkId: message.networkId });
  }
  const result = await recordInbound(storage, on, { ...message, media: kept }, handoff);
  // Stored meanwhile by another request: its files are the ones kept.
  if (result.duplicate && media) await discardMedia(media, kept, log);
  return result;
}

/**
 * POST /webhooks/loopback: what the contact does, forged by the caller. A message is stored
 * as a real network's is (an SMS reaction text quoting one of our messages is a reaction on
 * it, answered with that message's id and timestamp). A reaction, typing, read receipt, edit
 * or unsend becomes the events a real network's webhook reports and is applied as theirs
 * are (applyNetworkEvents), answered with the message it touched or the typing state.
 */
export async function receiveLoopback(
  deps: { storage: Storage; lines: LineRegistry; log: Logger; media?: MediaDeps; config: { MAX_MESSAGE_LENGTH: number } & HandoffConfig; metrics?: MessageMetrics },
  input: LoopbackInput,
) {
  const { storage } = deps;
  const { phone } = input;
  const on = lineRef(loopbackLine(deps.lines, input.line));
  if (input.message !== undefined || input.media !== undefined) return receiveLoopbackMessage(deps, on, { ...input, message: input.message ?? "" });
  if (input.chat) {
    const info = loopbackGroup(input.chat, phone);
    await applyGroupReport(storage, on, info);
    return { success: true, chat: await chatRecordById(storage, (await storage.chats.byNetworkId("loopback", info.networkId))!.id) };
  }
  const apply = (events: Partial<WebhookEvents>) =>
    applyNetworkEvents(storage, on, { ...webhookEvents([], []), ...events }, deps.log, { maxMessageLength: deps.config.MAX_MESSAGE_LENGTH });
  if (input.typing !== undefined) {
    await apply({ typing: [{ phone, typing: input.typing }] });
    return { success: true, typing: input.typing };
  }
  let touched: MessageRow;
  if (input.reaction) {
    touched = await conversationMessage(storage.messages, phone, input.reaction.message_id, "reaction.message_id");
    const { reaction, remove = false } = input.reaction;
    await apply({ reactions: [{ phone, targetNetworkId: targetOf(touched).networkId, reaction, remove }] });
  } else if (input.read) {
    touched = await conversationMessage(storage.messages, phone, input.read.message_id, "read.message_id");
    await apply({ reads: [{ networkId: targetOf(touched).networkId, at: Date.now() }] });
  } else {
    const [field, networkId] = input.edit ? ["edit.id", input.edit.id] : ["unsend.id", input.unsend!.id];
    touched = await contactMessage(storage, phone, networkId, field);
    // The loopback network keeps no edit times: the same text again is a repeated report.
    if (input.unsend || input.edit!.message !== touched.body) {
      const kind = input.unsend ? "unsend" : "edit";
      await apply({ edits: [{ networkId, phone, kind, ...(input.edit ? { message: input.edit.message } : {}), at: Date.now() }] });
    }
  }
  return { success: true, message: await currentRecord(storage, touched.id) };
}

/**
 * The loopback line a forged message comes in on: `line` when named (it must be a loopback
 * line), else the default line when it is one, else the first loopback line; 422 when there is none.
 */
function loopbackLine(lines: LineRegistry, ref: string | undefined): Line {
  const found = ref !== undefined ? lines.find(ref) : lines.default().row.network === "loopback" ? lines.default() : lines.all().find((l) => l.row.network === "loopback");
  if (ref !== undefined && !found) throw new AppError("BAD_REQUEST", `line: no line ${JSON.stringify(ref)} (GET /api/lines lists them)`);
  if (!found || found.row.network !== "loopback") {
    throw new AppError("UNPROCESSABLE_CONTENT", `line: ${found ? `the line ${found.row.name} is not` : "there is no"} loopback line: only a loopback line takes forged inbound messages (add one: POST /api/lines)`);
  }
  return found;
}

/** The contact's message the loopback network knows by `networkId`, else 400 naming `field`. */
async function contactMessage(storage: Storage, phone: string, networkId: string, field: string): Promise<MessageRow> {
  const row = await storage.messages.byNetworkId("loopback", "inbound", networkId);
  if (row?.phone !== phone) throw new AppError("BAD_REQUEST", `${field}: no message from this contact with this id`);
  return row;
}

/** A group as the loopback webhook describes it: the sender is one of its participants. */
const loopbackGroup = (chat: { id: string; name?: string | null | undefined; participants: string[] }, sender: string): GroupInfo => ({
  networkId: chat.id,
  name: chat.name ?? null,
  participants: chat.participants.includes(sender) ? chat.participants : [...chat.participants, sender],
});

/** A message forged on the loopback webhook (`chat`: in that group, from `phone`). */
async function receiveLoopbackMessage(
  deps: { storage: Storage; log: Logger; media?: MediaDeps; metrics?: MessageMetrics; config?: HandoffConfig },
  on: LineRef,
  input: { phone: string; message: string; id?: string; media?: readonly { url: string }[]; reply_to?: string; chat?: LoopbackInput["chat"] },
) {
  const group = input.chat ? await groupChat(deps.storage, on, loopbackGroup(input.chat, input.phone)) : undefined;
  const reacted = input.message && !input.media && !group ? await applyReactionText(deps.storage, input.phone, input.message) : undefined;
  if (reacted) return inboundAnswer((await toRecords(deps.storage.messages, [reacted]))[0]!);
  const conversation = group ? { phone: "" as const, group: { ...group, networkId: group.networkId! } } : input.phone;
  const replyTo = input.reply_to === undefined ? undefined : (await conversationMessage(deps.storage.messages, conversation, input.reply_to, "reply_to")).id;
  const { record, duplicate } = await storeInbound(
    deps.storage,
    on,
    {
      phone: input.phone,
      message: input.message,
      ...(input.id ? { networkId: input.id } : {}),
      ...(input.media ? { media: input.media.map((m) => ({ url: m.url })) } : {}),
      ...(replyTo ? { replyTo } : {}),
      ...(group ? { chatId: group.id } : {}),
    },
    deps.log,
    deps.media,
    handoffOf(deps.config),
  );
  if (!duplicate) deps.metrics?.message("inbound", "loopback", "received");
  return inboundAnswer(record);
}

/**
 * Stores what a network reported: inbound messages (once per network id), delivery reports
 * (each kept with its time; the status rule decides whether it moves the message), then
 * reactions, read receipts, edits and typing (src/messages/reactions.ts, read-state.ts,
 * edits.ts, typing.ts). Inbound text of every network passes the rules of a sent message
 * first (cleanInboundText: cleaned or cut with a mark, never refused, since the network will
 * not send it again); a text that is an SMS reaction to one of our messages is applied as a
 * reaction and never stored as a message.
 */
export async function applyNetworkEvents(
  storage: Storage,
  on: LineRef,
  events: WebhookEvents,
  log: Logger,
  opts: { maxMessageLength: number; media?: MediaDeps; metrics?: MessageMetrics; handoff?: Handoff },
): Promise<AppliedEvents> {
  const { messages } = storage;
  const { network } = on;
  const result: AppliedEvents = { stored: 0, duplicates: 0, applied: 0, ignored: 0, changed: 0 };
  for (const m of events.inbound) {
    if (!isE164(m.phone)) {
      log.warn("inbound message from a non-phone address skipped", { network, networkId: m.networkId });
      continue;
    }
    const { text, changes } = cleanInboundText(m.message, opts.maxMessageLength);
    if (Object.keys(changes).length > 0) log.warn("inbound text cleaned to the message rules", { network, networkId: m.networkId, ...changes });
    // Media alone is a message (its text empty); nothing readable and no media is none.
    if (text === null && !m.media?.length) {
      log.warn("inbound message with no readable text skipped", { network, networkId: m.networkId });
      continue;
    }
    // An SMS reaction text quotes a message of a direct chat; a group's is a message.
    if (!m.chat && text !== null && !m.media?.length && (await applyReactionText(storage, m.phone, m.message))) {
      result.changed++;
      continue;
    }
    const group = m.chat ? await groupChat(storage, on, m.chat) : undefined;
    const replyTo = m.replyToNetworkId ? await repliedByNetworkId(storage.messages, network, m.phone, m.replyToNetworkId, group?.id) : undefined;
    const { duplicate } = await storeInbound(
      storage,
      on,
      {
        phone: m.phone,
        message: text ?? "",
        networkId: m.networkId,
        ...(m.optOutType ? { optOutType: m.optOutType } : {}),
        ...(m.media ? { media: m.media } : {}),
        ...(replyTo ? { replyTo } : {}),
        ...(group ? { chatId: group.id } : {}),
      },
      log,
      opts.media,
      opts.handoff,
    );
    if (duplicate) result.duplicates++;
    else {
      result.stored++;
      opts.metrics?.message("inbound", network, "received");
    }
  }
  for (const report of events.statuses) {
    const message =
      (report.messageId ? await messages.get(report.messageId) : undefined) ??
      (report.networkId ? await messages.byNetworkId(network, "outbound", report.networkId) : undefined);
    if (!message || message.direction !== "outbound") {
      result.ignored++;
      log.debug("status report about no message of ours", { network, networkId: report.networkId });
      continue;
    }
    const patch = { ...(message.networkId ? {} : { networkId: report.networkId ?? null }), ...(report.error ? { error: report.error } : {}) };
    const applied = await messages.setStatus(message.id, report.status, patch);
    await messages.recordStatusReport({
      messageId: message.id,
      network,
      networkStatus: report.networkStatus,
      status: report.status,
      reportedAt: report.at ?? Date.now(),
      applied,
      error: report.error ?? null,
    });
    if (applied) {
      result.applied++;
      opts.metrics?.message("outbound", network, report.status);
    } else result.ignored++;
  }
  const changes = [
    ...(events.chats ?? []).map((c) => () => applyGroupReport(storage, on, c)),
    ...events.reactions.map((r) => () => applyInboundReaction(storage, network, r, log)),
    ...events.reads.map((r) => () => applyReadReceipt(storage, network, r, log)),
    ...events.edits.map((e) => () => applyInboundEdit(storage, network, e, log, opts.maxMessageLength)),
    ...events.typing.filter((t) => isE164(t.phone)).map((t) => () => applyTyping(storage, t)),
  ];
  for (const change of changes) if (await change()) result.changed++;
  return result;
}

/**
 * Our message (sent or received) that the network's id names, in the same conversation (the
 * contact's direct chat, or the group `chatId`): what an inbound threaded reply answers.
 * Undefined when we do not have it (sent before Textwire).
 */
async function repliedByNetworkId(messages: MessageRepository, network: string, phone: string, networkId: string, chatId?: string): Promise<string | undefined> {
  const replied = (await messages.byNetworkId(network, "outbound", networkId)) ?? (await messages.byNetworkId(network, "inbound", networkId));
  if (!replied) return undefined;
  return (chatId ? replied.chatId === chatId : replied.chatId === null && replied.phone === phone) ? replied.id : undefined;
}

/** The catch-up cursor of a line, kept with its driver's state (src/lines/drivers.ts stateKeyOf). */
function lineCursor(storage: Storage, line: Line) {
  const key = stateKeyOf(line.row);
  return { get: () => storage.networkState.get(key, "catch-up"), set: (value: string) => storage.networkState.set(key, "catch-up", value) };
}

/** The line as its stored messages name it. */
export const lineRef = (line: Line): LineRef => ({ id: line.row.id, network: line.row.network });

/** Stores what the line's webhooks missed (for networks that do not retry them). */
export async function catchUpLine(
  deps: { storage: Storage; log: Logger; config: { MAX_MESSAGE_LENGTH: number } & HandoffConfig; media?: MediaDeps; metrics?: MessageMetrics },
  line: Line,
): Promise<AppliedEvents | null> {
  if (!line.driver.catchUp) return null;
  const cursor = lineCursor(deps.storage, line);
  const events = await line.driver.catchUp(await cursor.get());
  const applied = await applyNetworkEvents(deps.storage, lineRef(line), events, deps.log, {
    maxMessageLength: deps.config.MAX_MESSAGE_LENGTH,
    handoff: handoffOf(deps.config),
    ...(deps.media ? { media: deps.media } : {}),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  if (events.cursor) await cursor.set(events.cursor);
  return applied;
}

/** How many messages one reconciliation pass asks about. */
const RECONCILE_BATCH = 20;
/** Only messages of the last day are reconciled: older ones are left as they are. */
const RECONCILE_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * Asks the network about outbound messages not final `afterMs` after their last change
 * (a bounded batch, oldest check first) and applies what it says as any report is.
 */
export async function reconcileLine(
  deps: { storage: Storage; log: Logger; config: { MAX_MESSAGE_LENGTH: number }; metrics?: MessageMetrics },
  line: Line,
  afterMs: number,
): Promise<AppliedEvents | null> {
  if (!line.driver.reconcile) return null;
  const messages = deps.storage.messages;
  const pending = await messages.pendingOutbound(line.row.id, afterMs, RECONCILE_WINDOW_MS, RECONCILE_BATCH);
  if (pending.length === 0) return null;
  await messages.markChecked(pending.map((p) => p.id));
  const reports = await line.driver.reconcile(pending);
  const current = new Map(pending.map((p) => [p.id, p.status]));
  // A report that only repeats the status the message has is not news.
  const statuses = reports.filter((r) => !r.messageId || current.get(r.messageId) !== r.status);
  return applyNetworkEvents(deps.storage, lineRef(line), webhookEvents([], statuses), deps.log, { maxMessageLength: deps.config.MAX_MESSAGE_LENGTH, metrics: deps.metrics });
}
