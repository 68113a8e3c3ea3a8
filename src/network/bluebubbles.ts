import { timingSafeEqual } from "node:crypto";
import { AppError } from "../errors";
import type { Logger } from "../log";
import { extensionOf } from "../media/sniff";
import type { PendingMessage } from "../vocabulary/messages";
import { REACTIONS } from "../vocabulary/reactions";
import {
  checkFailure,
  NetworkUnreachable,
  SendOutcomeUnknown,
  sendRequestFailure,
  type DriverState,
  type EditEvent,
  type GroupInfo,
  type InboundMedia,
  type NetworkDriver,
  type OutboundMedia,
  type ReactionEvent,
  type SendResult,
  type StatusEvent,
  webhookEvents,
  type WebhookEvents,
} from "./driver";
import { tracedFetch } from "../observability/trace";

/**
 * iMessage through a BlueBubbles server (github.com/BlueBubblesApp/bluebubbles-server,
 * read at v1.9.9). Each rule below names the server file it follows, under
 * packages/server/src/server/; docs/networks.md explains them.
 */
export interface BlueBubblesConfig {
  url: string;
  password: string;
  /** BlueBubbles cannot sign webhooks: it calls `/webhooks/bluebubbles?secret=<this>`. */
  webhookSecret: string;
  /** The service of a new chat's guid (`<service>;-;<address>`): iMessage, or SMS for green-bubble relays. */
  service?: "iMessage" | "SMS";
  /** How long a send may take before its outcome is unknown. */
  sendTimeoutMs?: number;
  /** A message not found on the server this long after it was stored is failed by reconcile. */
  giveUpMs?: number;
  /** Where chat guids are remembered across restarts. */
  state?: DriverState;
  log?: Logger;
}

/** The fields of a BlueBubbles message that Textwire reads (api/serializers/MessageSerializer.ts). */
interface BbMessage {
  guid?: string;
  tempGuid?: string | null;
  text?: string | null;
  isFromMe?: boolean;
  handle?: { address?: string } | null;
  dateCreated?: number;
  dateDelivered?: number | null;
  error?: number;
  attachments?: BbAttachment[] | null;
  /** databases/transformers/MessageTypeTransformer.ts: a tapback is "love" … "-question" (chat.db 2000–2005, 3000–3005). */
  associatedMessageType?: string | null;
  /** The message a tapback is on, as chat.db keeps it: `p:<part>/<guid>` or `bp:<guid>`. */
  associatedMessageGuid?: string | null;
  dateRead?: number | null;
  /** Ventura+: set by an edit and by an unsend (databases/imessage/pollers/MessagePoller.ts poll). */
  dateEdited?: number | null;
  dateRetracted?: number | null;
  /** 0 once every part is unsent (databases/imessage/entity/Message.ts isFullyUnsent). */
  partCount?: number | null;
  /** A threaded reply: the guid of the message it answers. */
  threadOriginatorGuid?: string | null;
  chats?: BbChat[] | null;
  /** databases/imessage/pollers/MessagePoller.ts handleGroupChanges: 1 participant added or removed, 2 renamed, 3 left or icon; text empty. */
  itemType?: number | null;
}

/** The fields of an attachment that Textwire reads (api/serializers/AttachmentSerializer.ts). */
interface BbAttachment {
  guid?: string;
  mimeType?: string | null;
  transferName?: string | null;
}

/** api/serializers/ChatSerializer.ts: style 43 is a group, 45 a one-to-one chat; participants (HandleSerializer.ts) only when asked for. */
interface BbChat {
  guid?: string;
  style?: number;
  chatIdentifier?: string;
  displayName?: string | null;
  participants?: { address?: string }[];
  /** chatRouter.ts create: the chat with its first message. */
  messages?: { guid?: string }[];
}

interface BbReply {
  status: number;
  json: { status?: number; message?: string; data?: unknown; error?: { type?: string; message?: string } };
}

/** Our message id travels to BlueBubbles as the temp guid and comes back on its echo. */
const TEMP_PREFIX = "textwire-";
const PAGE = 100;
/** Lookups other than sends (chat lookup, queries). */
const QUERY_TIMEOUT_MS = 30_000;
/** managers/outgoingMessageManager/messagePromise.ts matches from 10 s before the send. */
const MATCH_SLACK_MS = 10_000;
/** api/http/constants.ts invisibleMediaChar: the character standing for an attachment in a text. */
const MEDIA_CHAR = /\uFFFC/g;

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** helpers/utils.ts onlyAlphaNumeric: how the server compares texts to match a sent message. */
const alnum = (s: string) => s.replace(/[\W_]+/g, "");

/** A group chat: guid with `;+;`, style 43, or more than one participant. */
const isGroupChat = (c: BbChat) => (c.guid ?? "").includes(";+;") || c.style === 43 || (c.participants?.length ?? 0) > 1;
const isGroup = (m: BbMessage) => (m.chats ?? []).some(isGroupChat);

/** The group a message is in, as the event tells it: participants empty when the event has none (looked up later, groupsLookedUp). */
function groupOf(m: BbMessage): GroupInfo | undefined {
  const chat = (m.chats ?? []).find(isGroupChat);
  return chat?.guid ? groupInfo(chat) : undefined;
}

/** A chat (ChatSerializer.ts) as Textwire keeps a group: its guid, displayName ("" is none) and participants' addresses. */
const groupInfo = (chat: BbChat): GroupInfo => ({
  networkId: chat.guid!,
  name: chat.displayName || null,
  participants: (chat.participants ?? []).flatMap((h) => (h.address ? [h.address] : [])),
});

/** A group change the server also announces as `new-message` (MessagePoller.ts: no text, itemType 1–3): never a message. */
const isGroupChange = (m: BbMessage) => !m.text && (m.itemType ?? 0) >= 1 && (m.itemType ?? 0) <= 3;

/** index.ts startChatListeners: the webhook events of a group's changes, each carrying the change as a message with its chat. */
const GROUP_EVENTS = new Set(["group-name-change", "participant-added", "participant-removed", "participant-left"]);

/** The chat.db prefix of a tapback's target: `p:<part>/` on a message part, `bp:` on a balloon (app or link) message. */
const TARGET_PREFIX = /^(?:p:\d+\/|bp:)/;

/**
 * A tapback (associatedMessageType set; MessageTypeTransformer.ts makes 0 null) as a
 * reaction: "-love" removes a love. Ours (isFromMe: the echo of our own reaction, or one the
 * Mac's user sent), those in group chats, and kinds Textwire does not know (a sticker,
 * an emoji tapback serialized as its number, "2006") are skipped.
 */
function reactionOf(m: BbMessage, log?: Logger): ReactionEvent | undefined {
  const type = m.associatedMessageType!;
  const remove = type.startsWith("-");
  const reaction = REACTIONS.find((r) => r === (remove ? type.slice(1) : type));
  const targetNetworkId = (m.associatedMessageGuid ?? "").replace(TARGET_PREFIX, "");
  if (!reaction || !targetNetworkId || m.isFromMe || !m.handle?.address) {
    log?.debug("bluebubbles: tapback skipped", { guid: m.guid, type, fromMe: m.isFromMe ?? false });
    return undefined;
  }
  const chat = groupOf(m)?.networkId;
  return { phone: m.handle.address, ...(chat ? { chat } : {}), targetNetworkId, reaction, remove, ...(m.dateCreated ? { at: m.dateCreated } : {}) };
}

/**
 * An edit or unsend of the contact's message: both set a newer dateEdited; an unsend leaves
 * no part (partCount 0) and no text, and Apple leaves dateRetracted unused but it counts too
 * (MessagePoller.ts poll). Applied once per dateEdited by the domain.
 */
function editOf(m: BbMessage, phone: string, text: string): EditEvent {
  const unsent = m.dateRetracted != null || m.partCount === 0 || (!text && !(m.attachments ?? []).length);
  const at = m.dateRetracted ?? m.dateEdited!;
  return unsent ? { networkId: m.guid!, phone, kind: "unsend", at } : { networkId: m.guid!, phone, kind: "edit", message: text, at };
}

/**
 * Turns BlueBubbles messages into events. From others: inbound messages (in a group: with
 * the group, the sender from `handle.address`), tapbacks as reactions (never a message),
 * edits and unsends (a message with dateEdited, found by its guid: `updated-message` has no
 * chats, index.ts handleUpdatedMessage); a group change (isGroupChange) is no message. From us: reports on our messages, and read receipts (dateRead,
 * reported for one-to-one chats only). After an hour the server announces a change as
 * `new-message` again (pollers/index.ts getMessageEvent once its event cache forgot the
 * guid): the inbound copy is then stored once by its guid and the edit applies as an edit.
 * Attachments become the message's media, downloaded from the server by `attachmentUrl` (a
 * message of attachments alone has empty text).
 */
export function bbEvents(messages: BbMessage[], type = "new-message", log?: Logger, attachmentUrl?: (guid: string) => string): WebhookEvents {
  const events = webhookEvents([], []);
  for (const m of messages) {
    if (!m.guid || isGroupChange(m)) continue;
    if (m.associatedMessageType && m.associatedMessageType !== "0") {
      if (type === "new-message") {
        const reaction = reactionOf(m, log);
        if (reaction) events.reactions.push(reaction);
      }
      continue;
    }
    if (m.isFromMe) {
      const messageId = m.tempGuid?.startsWith(TEMP_PREFIX) ? m.tempGuid.slice(TEMP_PREFIX.length) : undefined;
      events.statuses.push(statusOf(m, type === "message-send-error", messageId));
      if (m.dateRead) events.reads.push({ networkId: m.guid, at: m.dateRead });
      continue;
    }
    if (type === "message-send-error" || !m.handle?.address) continue;
    const group = groupOf(m);
    const text = (m.text ?? "").replace(MEDIA_CHAR, "").trim();
    if (m.dateEdited || m.dateRetracted) events.edits.push(editOf(m, m.handle.address, text));
    if (type !== "new-message") continue;
    const media: InboundMedia[] = (m.attachments ?? []).flatMap((a) =>
      a.guid && attachmentUrl ? [{ url: attachmentUrl(a.guid), trusted: true, ...(a.mimeType ? { contentType: a.mimeType } : {}) }] : [],
    );
    if (!text && media.length === 0) continue;
    events.inbound.push({
      phone: m.handle.address,
      ...(group ? { chat: group } : {}),
      message: text,
      networkId: m.guid,
      ...(media.length ? { media } : {}),
      ...(m.threadOriginatorGuid ? { replyToNetworkId: m.threadOriginatorGuid } : {}),
    });
  }
  return events;
}

function statusOf(m: BbMessage, sendError: boolean, messageId: string | undefined): StatusEvent {
  const at = m.dateDelivered ?? m.dateCreated;
  const failed = (m.error ?? 0) !== 0 || sendError;
  const status = failed ? "failed" : m.dateDelivered ? "delivered" : "sent";
  return {
    networkId: m.guid,
    ...(messageId ? { messageId } : {}),
    networkStatus: failed ? `error ${m.error ?? ""}`.trim() : status,
    status,
    ...(at ? { at } : {}),
    ...(failed ? { error: `bluebubbles error ${m.error ?? "on send"}` } : {}),
  };
}

/**
 * Whether an error answer to a send means the message may still go out. The server waits
 * up to 2 minutes for the message to appear in chat.db (messagePromise.ts) after the
 * AppleScript ran; when that wait ends it answers 500 without a message (messageRouter.ts
 * sendText: MessagePromiseRejection without `msg`; chatRouter.ts create: the unhandled
 * "Message send timeout"), and its own response timeout is 504 (httpRoutes.ts).
 */
function outcomeUnknown(reply: BbReply): boolean {
  if (reply.status === 504) return true;
  if (reply.status !== 500) return false;
  const error = reply.json.error?.message ?? "";
  return error === "Message send timeout" || (reply.json.message === "Message Send Error" && reply.json.data == null && error.startsWith("Failed to send message! See attached"));
}

/** iMessage through a BlueBubbles server's REST API, its webhooks and a catch-up query. */
export function createBlueBubblesNetwork(config: BlueBubblesConfig): NetworkDriver {
  const base = config.url.replace(/\/+$/, "");
  const service = config.service ?? "iMessage";
  const sendTimeoutMs = config.sendTimeoutMs ?? 120_000;
  const giveUpMs = config.giveUpMs ?? 30 * 60_000;
  const log = config.log;
  const api = (path: string, query = "") => `${base}/api/v1/${path}?password=${encodeURIComponent(config.password)}${query}`;
  /**
   * An attachment's bytes: attachmentRouter.ts download (GET attachment/:guid/download). By
   * default the server converts what clients cannot show (HEIC to JPEG, CAF to MP3); the
   * response's Content-Type says which.
   */
  const attachmentUrl = (guid: string) => api(`attachment/${encodeURIComponent(guid)}/download`);
  /** Chat guids by address; the database copy survives restarts. */
  const chats = new Map<string, string>();

  // An empty value is a forgotten chat.
  const remembered = async (phone: string) => (chats.get(phone) ?? (await config.state?.get(`chat:${phone}`))) || undefined;
  async function remember(phone: string, guid: string) {
    if (chats.get(phone) === guid) return;
    chats.set(phone, guid);
    await config.state?.set(`chat:${phone}`, guid);
  }

  async function call(method: "GET" | "POST" | "PUT", path: string, body: unknown, timeoutMs: number, query = ""): Promise<BbReply> {
    let res: Response;
    try {
      res = await tracedFetch(api(path, query), {
        method,
        ...(body === undefined ? {} : { headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      // A refused connection stays NetworkUnreachable: a send that first looks its chat up (handle/query) sent nothing, and its line's fallback may take it.
      const failure = sendRequestFailure("bluebubbles", err);
      throw failure instanceof NetworkUnreachable ? failure : new AppError("BAD_GATEWAY", `bluebubbles: unreachable (${(err as Error).name})`);
    }
    return { status: res.status, json: (await res.json().catch(() => ({}))) as BbReply["json"] };
  }

  /**
   * A send: the request may have gone out when the connection fails, so a timeout or a cut
   * connection is an unknown outcome; only a refused connection surely sent nothing.
   */
  async function sendCall(path: string, body: unknown): Promise<BbReply> {
    let res: Response;
    try {
      res = await tracedFetch(api(path), {
        method: "POST",
        // A form (an attachment) goes as multipart, its boundary set by fetch.
        ...(body instanceof FormData ? { body } : { headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(sendTimeoutMs),
      });
    } catch (err) {
      throw sendRequestFailure("bluebubbles", err);
    }
    let text: string;
    try {
      text = await res.text();
    } catch {
      throw new SendOutcomeUnknown("bluebubbles: the answer to the send was cut");
    }
    try {
      return { status: res.status, json: JSON.parse(text) as BbReply["json"] };
    } catch {
      // A 200 we cannot read still means the Mac sent it: its echo will say which message.
      if (res.status === 200) throw new SendOutcomeUnknown("bluebubbles: unreadable answer to the send");
      return { status: res.status, json: {} };
    }
  }

  /**
   * The one-to-one chat the server already has with this address: handle/query with chats
   * (api/interfaces/handleInterface.ts lists every chat a handle takes part in). One of our
   * service first, then any other (an SMS chat, or a newer macOS' `any;-;` guid).
   */
  async function findChat(phone: string): Promise<string | undefined> {
    const known = await remembered(phone);
    if (known) return known;
    const { status, json } = await call("POST", "handle/query", { address: phone, with: ["chats"], limit: 10, offset: 0 }, QUERY_TIMEOUT_MS);
    if (status !== 200 || !Array.isArray(json.data)) {
      throw new AppError("BAD_GATEWAY", `bluebubbles: chat lookup failed (status ${status})`);
    }
    const handles = json.data as { address?: string; chats?: BbChat[] }[];
    const direct = handles
      .filter((h) => h.address === phone)
      .flatMap((h) => h.chats ?? [])
      .map((c) => c.guid ?? "")
      .filter((g) => g.endsWith(`;-;${phone}`));
    const guid = direct.find((g) => g.startsWith(`${service};`)) ?? direct[0];
    if (guid) await remember(phone, guid);
    return guid;
  }

  function failure(reply: BbReply): never {
    if (outcomeUnknown(reply)) throw new SendOutcomeUnknown(`bluebubbles: ${reply.json.error?.message ?? `status ${reply.status}`}`);
    const reason = `bluebubbles: ${reply.json.error?.message ?? reply.json.message ?? `status ${reply.status}`}`;
    throw new AppError(reply.status === 400 ? "BAD_REQUEST" : "BAD_GATEWAY", reason);
  }

  /** message/query in the chat around the send, matched as messagePromise.ts matches: alphanumeric text, from me, not before. */
  async function findSent(pending: PendingMessage[], chatGuid: string): Promise<Map<string, BbMessage>> {
    const found = new Map<string, BbMessage>();
    const after = Math.min(...pending.map((p) => p.createdAt)) - MATCH_SLACK_MS;
    const { status, json } = await call("POST", "message/query", { chatGuid, after, limit: PAGE, offset: 0, sort: "ASC", with: ["chat"] }, QUERY_TIMEOUT_MS);
    // messageRouter.ts query: an unknown chat guid ends without a response body (404).
    if (status !== 200 || !Array.isArray(json.data)) return found;
    const taken = new Set<string>();
    for (const p of [...pending].sort((a, b) => a.createdAt - b.createdAt)) {
      const match = (json.data as BbMessage[]).find(
        (m) => m.isFromMe && m.guid && !taken.has(m.guid) && alnum(m.text ?? "") === alnum(p.text) && (m.dateCreated ?? 0) >= p.createdAt - MATCH_SLACK_MS,
      );
      if (match?.guid) {
        taken.add(match.guid);
        found.set(p.id, match);
      }
    }
    return found;
  }

  /**
   * message/text in a chat the server has. api/http/api/v1/validators/messageValidator.ts:
   * apple-script needs a tempGuid; a reply (selectedMessageGuid, partIndex) goes through the
   * Private API, which the server must have enabled (helpers/utils.ts checkPrivateApiStatus),
   * else it fails. The result, or undefined with the failed reply.
   */
  async function textInChat(chatGuid: string, text: string, tempGuid: string, replyTo?: string): Promise<{ sent?: SendResult; reply: BbReply }> {
    const thread = replyTo ? { method: "private-api", selectedMessageGuid: replyTo, partIndex: 0 } : { method: "apple-script" };
    const reply = await sendCall("message/text", { chatGuid, tempGuid, message: text, ...thread });
    const guid = (reply.json.data as { guid?: string } | undefined)?.guid;
    return reply.status === 200 && guid ? { sent: { networkId: guid, status: "sent" }, reply } : { reply };
  }

  /** A text into a group: its chat guid, always known (a group is never made by a send to it). */
  async function sendToGroup(chatGuid: string, text: string, tempGuid: string, replyTo?: string): Promise<SendResult> {
    const { sent, reply } = await textInChat(chatGuid, text, tempGuid, replyTo);
    if (sent) return sent;
    failure(reply);
  }

  /** A text: message/text in the chat the server has, else chat/new; `replyTo` threads it (the network's guid). */
  async function sendText(phone: string, text: string, tempGuid: string, replyTo?: string): Promise<SendResult> {
    const chatGuid = await findChat(phone);
    if (chatGuid) {
      const { sent, reply } = await textInChat(chatGuid, text, tempGuid, replyTo);
      if (sent) return sent;
      // The chat may be gone from the Mac: looked up again next time.
      if (reply.status === 500 && !outcomeUnknown(reply)) await remember(phone, "");
      failure(reply);
    }
    // No chat yet: chat/new (api/interfaces/chatInterface.ts createWithAppleScript sends
    // to `<service>;-;<address>` and waits for the chat to appear). It cannot thread
    // (validators/chatValidator.ts has no selectedMessageGuid): a reply goes unthreaded.
    const reply = await sendCall("chat/new", { addresses: [phone], message: text, service, method: "apple-script", tempGuid });
    const data = reply.json.data as { guid?: string; messages?: { guid?: string }[] } | undefined;
    if (reply.status === 200 && data?.guid) {
      await remember(phone, data.guid);
      const guid = data.messages?.[0]?.guid;
      return { ...(guid ? { networkId: guid } : {}), status: "sent" };
    }
    failure(reply);
  }

  /**
   * One file: POST message/attachment, multipart with chatGuid, tempGuid, name, method and the
   * file as `attachment` (messageValidator.ts validateAttachment, messageRouter.ts
   * sendAttachment). The server waits for a message whose attachment has this name (without
   * extension), so each name is the file's own id. Returns the sent message's guid.
   */
  async function sendAttachment(chatGuid: string, tempGuid: string, media: OutboundMedia): Promise<string> {
    const name = `${media.id}.${extensionOf(media.contentType)}`;
    const form = new FormData();
    form.set("chatGuid", chatGuid);
    form.set("tempGuid", tempGuid);
    form.set("name", name);
    form.set("method", "apple-script");
    form.set("attachment", new File([(await media.bytes()) as Uint8Array<ArrayBuffer>], name, { type: media.contentType }));
    const reply = await sendCall("message/attachment", form);
    const guid = (reply.json.data as { guid?: string } | undefined)?.guid;
    if (reply.status === 200 && guid) return guid;
    failure(reply);
  }

  /** The conversation's chat as sends find it; without one, the guid the server's own fallback uses (api/apple/actions.ts). */
  const chatOf = async (phone: string) => (await findChat(phone)) ?? `${service};-;${phone}`;

  /**
   * A Private API action, `field` naming it to clients. helpers/utils.ts checkPrivateApiStatus
   * answers 500 "iMessage Private API is not enabled!" (through middleware/privateApiMiddleware.ts,
   * or the router's catch on edit and unsend): this server cannot until its owner enables it,
   * so 422. Any other failure, a disconnected helper included, is the network's (502).
   */
  async function privateApi(field: string, what: string, path: string, body: unknown, timeoutMs: number, method: "POST" | "PUT" = "POST"): Promise<BbMessage | undefined> {
    const reply = await call(method, path, body, timeoutMs);
    if (reply.status === 200) return reply.json.data as BbMessage | undefined;
    privateApiOff(field, reply);
    throw new AppError("BAD_GATEWAY", `bluebubbles: ${what} failed: ${reply.json.error?.message ?? reply.json.message ?? `status ${reply.status}`}`);
  }

  /** 422 when the answer says the server's Private API is off (helpers/utils.ts checkPrivateApiStatus). */
  function privateApiOff(field: string, reply: BbReply): void {
    if (reply.json.error?.message === "iMessage Private API is not enabled!") throw new AppError("UNPROCESSABLE_CONTENT", `${field}: the bluebubbles server's Private API is off`);
  }

  /** Groups' participants and names by guid, as the server last told them (a message's event has no participants). */
  const groups = new Map<string, GroupInfo>();

  /** GET chat/:guid?with=participants (chatRouter.ts find; 404 "Chat does not exist!"). */
  async function lookUpGroup(guid: string): Promise<GroupInfo> {
    const { status, json } = await call("GET", `chat/${encodeURIComponent(guid)}`, undefined, QUERY_TIMEOUT_MS, "&with=participants");
    const chat = json.data as BbChat | undefined;
    if (status !== 200 || !chat?.guid) throw new AppError("BAD_GATEWAY", `bluebubbles: chat lookup failed (status ${status})`);
    const info = groupInfo(chat);
    groups.set(guid, info);
    return info;
  }

  /**
   * Fills in what the events lack: a group message's participants (known, else looked up;
   * the sender alone when the lookup fails, so the message is never lost), and each reported
   * group change as the chat is now (a change whose lookup fails is logged and left out).
   */
  async function groupsLookedUp(events: WebhookEvents): Promise<WebhookEvents> {
    for (const m of events.inbound) {
      if (!m.chat || m.chat.participants.length > 0) continue;
      const known = groups.get(m.chat.networkId) ?? (await lookUpGroup(m.chat.networkId).catch(() => undefined));
      m.chat = known ? { ...known, name: m.chat.name ?? known.name } : { ...m.chat, participants: [m.phone] };
    }
    const changed: GroupInfo[] = [];
    for (const guid of new Set((events.chats ?? []).map((c) => c.networkId))) {
      try {
        changed.push(await lookUpGroup(guid));
      } catch (err) {
        log?.warn("bluebubbles: a group change was not looked up", { guid, error: (err as Error).message });
      }
    }
    const { chats: _, ...rest } = events;
    return changed.length ? { ...rest, chats: changed } : rest;
  }

  /** When the message was last edited (or unsent) on the Mac: messageRouter.ts find. */
  async function editedAt(guid: string): Promise<number> {
    const { status, json } = await call("GET", `message/${encodeURIComponent(guid)}`, undefined, QUERY_TIMEOUT_MS);
    if (status !== 200 || !json.data) throw new AppError("BAD_GATEWAY", `bluebubbles: the message is not on the server (status ${status})`);
    return (json.data as BbMessage).dateEdited ?? 0;
  }

  /**
   * Whether an edit or unsend took: the server answers 200 with the message as it is once its
   * wait for a newer dateEdited ends, changed or not (messageInterface.ts editMessage,
   * unsendMessage; helpers/utils.ts resultAwaiter), so Apple's refusal shows only there.
   * An unsend also leaves retracted parts (databases/imessage/entity/Message.ts hasUnsentParts).
   */
  function changed(after: BbMessage | undefined, before: number, unsend: boolean): boolean {
    if (!after || (after.dateEdited ?? 0) <= before) return false;
    const retracted = (after as { messageSummaryInfo?: { retractedParts?: number[] }[] | null }).messageSummaryInfo?.[0]?.retractedParts ?? [];
    return !unsend || after.partCount === 0 || retracted.length > 0;
  }

  return {
    name: "bluebubbles",
    // Reactions, typing, reads, edits, unsends and group changes through its Private API.
    capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true },

    async check() {
      // routers/serverRouter.ts getInfo: proves the URL and the password.
      try {
        const reply = await call("GET", "server/info", undefined, 10_000);
        if (reply.status !== 200) return { ok: false, detail: `bluebubbles: ${reply.status} ${reply.json.error?.message ?? reply.json.message ?? "no answer"}` };
        const info = (reply.json.data ?? {}) as { server_version?: string; os_version?: string; private_api?: boolean; helper_connected?: boolean };
        const privateApi = info.private_api && info.helper_connected ? "Private API on" : "Private API off (no reactions, typing, read marks, edits, groups or iMessage look-ups)";
        return { ok: true, detail: `bluebubbles: server ${info.server_version ?? "?"} on macOS ${info.os_version ?? "?"}, ${privateApi}` };
      } catch (err) {
        return checkFailure("bluebubbles", err);
      }
    },

    async imessageAvailable(phone) {
      // routers/handleRouter.ts getMessagesAvailability (Private API): `{ data: { available } }`; any error is "cannot say".
      try {
        const reply = await call("GET", "handle/availability/imessage", undefined, 10_000, `&address=${encodeURIComponent(phone)}`);
        const available = (reply.json.data as { available?: unknown } | undefined)?.available;
        return reply.status === 200 && typeof available === "boolean" ? available : undefined;
      } catch {
        return undefined;
      }
    },

    /** message/react (messageValidator.ts sendReactionRules): on part 0; a removal is `-love` (messageInterface.ts possibleReactions). */
    async react(target, reaction, remove) {
      const chatGuid = target.chat ?? (await chatOf(target.phone));
      const body = { chatGuid, selectedMessageGuid: target.networkId, reaction: remove ? `-${reaction}` : reaction, partIndex: 0 };
      await privateApi("reaction", "the reaction", "message/react", body, sendTimeoutMs);
    },

    /**
     * POST chat/:guid/typing starts it; the server stops it when a text is sent to that chat
     * (messageInterface.ts sendMessageSync). Its DELETE starts typing again (chatRouter.ts
     * stopTyping calls ChatInterface.startTyping at v1.9.9), so it is never sent: a stop
     * without a send cannot be done over its REST API.
     */
    async typing(phone, on, chat) {
      if (!on) throw new AppError("UNPROCESSABLE_CONTENT", "typing: the bluebubbles server cannot stop typing without a send (its DELETE /chat/:guid/typing starts it again)");
      await privateApi("typing", "typing", `chat/${encodeURIComponent(chat ?? (await chatOf(phone)))}/typing`, undefined, QUERY_TIMEOUT_MS);
    },

    /** POST chat/:guid/read (chatInterface.ts markRead); whether the contact sees it is the Mac's read-receipt setting. */
    async markRead(phone, chat) {
      await privateApi("read", "marking read", `chat/${encodeURIComponent(chat ?? (await chatOf(phone)))}/read`, undefined, QUERY_TIMEOUT_MS);
    },

    /**
     * chat/new with every address (chatRouter.ts create, chatInterface.ts create): a group
     * needs method private-api (createWithApplescript refuses several addresses on macOS 11+)
     * and a message; the answer is the chat (ChatSerializer.ts, participants and the first
     * message). chat/new takes no name (validators/chatValidator.ts createRules): Textwire
     * names it after with renameGroup.
     */
    async createGroup({ id, participants, text }) {
      const tempGuid = `${TEMP_PREFIX}${id}`;
      const reply = await sendCall("chat/new", { addresses: participants, message: text, service, method: "private-api", tempGuid });
      const data = reply.json.data as BbChat | undefined;
      if (reply.status !== 200 || !data?.guid) {
        privateApiOff("participants", reply);
        failure(reply);
      }
      const chat = groupInfo(data);
      groups.set(data.guid, chat);
      const guid = data.messages?.[0]?.guid;
      return { ...(guid ? { networkId: guid } : {}), status: "sent", chat };
    },

    /** PUT chat/:guid `{ displayName }` (chatRouter.ts update, chatInterface.ts setDisplayName; Private API). */
    async renameGroup(chat, name) {
      await privateApi("name", "renaming the group", `chat/${encodeURIComponent(chat)}`, { displayName: name }, QUERY_TIMEOUT_MS, "PUT");
      const known = groups.get(chat);
      if (known) groups.set(chat, { ...known, name });
    },

    /** POST chat/:guid/participant/add|remove `{ address }` (chatRouter.ts toggleParticipant, chatValidator.ts toggleParticipantRules; Private API). */
    async setParticipant(chat, phone, add) {
      await privateApi("phone", add ? "adding the participant" : "removing the participant", `chat/${encodeURIComponent(chat)}/participant/${add ? "add" : "remove"}`, { address: phone }, QUERY_TIMEOUT_MS);
      groups.delete(chat);
    },

    /** message/:guid/edit (messageValidator.ts editParamRules: both texts required); older devices show the compatibility text. */
    async edit(target, text) {
      const before = await editedAt(target.networkId);
      const body = { editedMessage: text, backwardsCompatibilityMessage: `Edited to “${text}”`, partIndex: 0 };
      const after = await privateApi("message", "the edit", `message/${encodeURIComponent(target.networkId)}/edit`, body, sendTimeoutMs);
      if (!changed(after, before, false)) throw new AppError("CONFLICT", "message: iMessage did not apply the edit (Apple allows edits within 15 minutes, 5 at most)");
    },

    /** message/:guid/unsend (messageValidator.ts unsendParamRules). */
    async unsend(target) {
      const before = await editedAt(target.networkId);
      const after = await privateApi("unsend", "the unsend", `message/${encodeURIComponent(target.networkId)}/unsend`, { partIndex: 0 }, sendTimeoutMs);
      if (!changed(after, before, true)) throw new AppError("CONFLICT", "unsend: iMessage did not unsend the message (Apple allows it within 2 minutes)");
    },

    async send({ id, phone, chat, text, media = [], replyTo }) {
      const tempGuid = `${TEMP_PREFIX}${id}`;
      const textOut = (t: string) => (chat ? sendToGroup(chat, t, tempGuid, replyTo) : sendText(phone, t, tempGuid, replyTo));
      if (media.length === 0) return textOut(text);
      // Text first (it makes the chat when there is none), then one attachment message per
      // file, each under the same temp guid so their echoes report on this message.
      let sent: SendResult | undefined = text ? await textOut(text) : undefined;
      const chatGuid = chat ?? (await chatOf(phone));
      for (const m of media) {
        const guid = await sendAttachment(chatGuid, tempGuid, m);
        sent ??= { networkId: guid, status: "sent" };
      }
      return sent!;
    },

    async webhook({ url, subpath, body }) {
      if (!sameSecret(url.searchParams.get("secret") ?? "", config.webhookSecret)) {
        throw new AppError("UNAUTHORIZED", "secret: missing or wrong");
      }
      if (subpath !== "") throw new AppError("NOT_FOUND", `no route POST /webhooks/bluebubbles/${subpath}`);
      // A message, or typing-indicator's `{ display, guid }`.
      let event: { type?: string; data?: BbMessage & { display?: unknown } };
      try {
        event = JSON.parse(body);
      } catch {
        throw new AppError("BAD_REQUEST", "body: malformed JSON");
      }
      const known = event.type === "new-message" || event.type === "updated-message" || event.type === "message-send-error";
      const events = known && event.data ? bbEvents([event.data], event.type, log, attachmentUrl) : webhookEvents([], []);
      // A group change: the chat it names is looked up as it is now.
      const changed = GROUP_EVENTS.has(event.type ?? "") && event.data ? groupOf(event.data) : undefined;
      if (changed) events.chats = [changed];
      // privateApi/eventHandlers/PrivateApiTypingEventHandler.ts: one-to-one chats only (it drops `;+;` guids).
      const typingIn = event.type === "typing-indicator" ? (event.data?.guid ?? "").split(";-;")[1] : undefined;
      if (typingIn && typeof event.data?.display === "boolean") events.typing.push({ phone: typingIn, typing: event.data.display });
      // An inbound one-to-one message names the chat of its sender: remembered for our sends.
      if (event.type === "new-message" && event.data && !event.data.isFromMe && events.inbound.length === 1 && !events.inbound[0]!.chat) {
        const chat = (event.data.chats ?? []).find((c) => c.guid?.endsWith(`;-;${events.inbound[0]!.phone}`));
        if (chat?.guid) await remember(events.inbound[0]!.phone, chat.guid);
      }
      return { ...(await groupsLookedUp(events)), response: Response.json({ success: true }) };
    },

    /** BlueBubbles does not retry webhooks: ask for every message since the newest one seen. */
    async catchUp(cursor) {
      // Inclusive of the newest message seen (one ms back): messages of the same ms are
      // not skipped, and the ones seen again are deduplicated by guid.
      // The first time, start from now: the Mac's old history is not news.
      let after = cursor === undefined ? Date.now() : Number(cursor);
      const all = webhookEvents([], []);
      for (let page = 0; page < 50; page++) {
        const { status, json } = await call(
          "POST",
          "message/query",
          { after: Math.max(0, after - 1), limit: PAGE, offset: 0, sort: "ASC", with: ["handle", "chat", "attachment"] },
          QUERY_TIMEOUT_MS,
        );
        if (status !== 200 || !Array.isArray(json.data)) throw new AppError("BAD_GATEWAY", `bluebubbles: message query failed (status ${status})`);
        const messages = json.data as BbMessage[];
        const events = bbEvents(messages, "new-message", log, attachmentUrl);
        // Tapbacks, reads and edits among them count too (a change after an hour is a new-message), and groups changed meanwhile.
        for (const key of ["inbound", "statuses", "reactions", "typing", "reads", "edits"] as const) (all[key] as unknown[]).push(...events[key]);
        for (const m of messages) if (isGroupChange(m) && groupOf(m)) (all.chats ??= []).push(groupOf(m)!);
        const newest = Math.max(after, ...messages.map((m) => m.dateCreated ?? 0));
        const done = messages.length < PAGE || newest === after;
        after = newest;
        if (done) break;
      }
      return { ...(await groupsLookedUp(all)), cursor: String(after) };
    },

    /**
     * Messages with a guid: message/:guid (messageRouter.ts find). Without one (the send's
     * outcome was unknown): the server keeps tempGuids only in memory, so the chat's
     * messages around the send are searched as the server matches its own sends.
     */
    async reconcile(pending) {
      const reports: StatusEvent[] = [];
      const now = Date.now();
      const notFound = (p: PendingMessage) => {
        if (now - p.createdAt < giveUpMs) return;
        reports.push({ messageId: p.id, networkStatus: "not found", status: "failed", error: "bluebubbles: the message was not found on the server" });
      };
      const byChat = new Map<string, PendingMessage[]>();
      for (const p of pending) {
        if (p.networkId) {
          const { status, json } = await call("GET", `message/${encodeURIComponent(p.networkId)}`, undefined, QUERY_TIMEOUT_MS);
          if (status === 200 && json.data) reports.push({ ...statusOf(json.data as BbMessage, false, p.id), messageId: p.id });
          else if (status === 404) notFound(p);
          continue;
        }
        const chatGuid = p.chatNetworkId ?? (await remembered(p.phone)) ?? `${service};-;${p.phone}`;
        byChat.set(chatGuid, [...(byChat.get(chatGuid) ?? []), p]);
      }
      for (const [chatGuid, list] of byChat) {
        const found = await findSent(list, chatGuid);
        for (const p of list) {
          const m = found.get(p.id);
          if (m) reports.push(statusOf(m, false, p.id));
          else notFound(p);
        }
      }
      return reports;
    },
  };
}
