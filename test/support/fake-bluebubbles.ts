/**
 * A stand-in for a BlueBubbles server (github.com/BlueBubblesApp/bluebubbles-server, read
 * at v1.9.9) on 127.0.0.1, behaving as its source does. Each behaviour names the file it
 * mirrors, under packages/server/src/server/:
 *
 * - `POST /api/v1/message/text?password=…` `{ chatGuid, tempGuid, message, method }`:
 *   validated as api/http/api/v1/validators/messageValidator.ts validateText does (chatGuid
 *   required; apple-script needs a tempGuid and a message; a tempGuid already being sent is
 *   refused); `selectedMessageGuid` (a threaded reply, with `partIndex`), like an effect or a
 *   subject, forces method private-api, which needs the Private API enabled
 *   (helpers/utils.ts checkPrivateApiStatus; off by default, as on a new server) and a
 *   message or subject; the sent message then has `threadOriginatorGuid` set (the
 *   interfaces/messageInterface.ts sendMessagePrivateApi path). A chat guid the Mac does not have fails as api/apple/actions.ts sendMessage
 *   fails, answered as api/http/api/v1/routers/messageRouter.ts sendText answers (500
 *   "Message Send Error", error type "iMessage Error"). A send may take as long as the test
 *   says; past the server's own 2-minute wait it answers as messagePromise.ts's timeout does.
 * - `POST /api/v1/chat/new` `{ addresses, message, service, method, tempGuid }`:
 *   api/interfaces/chatInterface.ts createWithAppleScript (macOS 11+): sends to
 *   `<service>;-;<address>`, the chat appears, answered with the chat and its message.
 *   Several addresses: apple-script refuses them ("Cannot create group chats on macOS Big
 *   Sur or newer!"); private-api (createWithPrivateApi: checkPrivateApiStatus first, a
 *   message required) makes an `iMessage;+;chat…` group with the message, answered with the
 *   chat (ChatSerializer.ts, participants and messages: chatRouter.ts create).
 * - Groups (routers/chatRouter.ts; httpRoutes.ts puts PrivateApiMiddleware on every change):
 *   `GET /api/v1/chat/:guid` (find; participants with `?with=participants`; 404 "Chat does
 *   not exist!"); `PUT /api/v1/chat/:guid` `{ displayName }` (update: chatValidator.ts
 *   updateRules, a one-person chat refused "Cannot rename a non-group chat!",
 *   chatInterface.ts setDisplayName); `POST /api/v1/chat/:guid/participant/add|remove`
 *   `{ address }` (toggleParticipant, toggleParticipantRules). Each change is recorded on the
 *   Mac as an item with no text (itemType 1 with groupActionType 0 added / 1 removed, 2 with
 *   groupTitle renamed, 3 with groupActionType 0 left) and announced as databases/imessage/
 *   pollers/MessagePoller.ts handleGroupChanges and index.ts startChatListeners do: its
 *   `participant-added` / `participant-removed` / `group-name-change` / `participant-left`
 *   event, and the same item as `new-message` (processMessageEvent). `contactRenamesGroup`
 *   and `contactLeavesGroup` are the other people's changes.
 * - `POST /api/v1/handle/query` `{ address, with: ["chats"] }`: routers/handleRouter.ts +
 *   api/interfaces/handleInterface.ts (handles whose id ends with the address, each with
 *   every chat it takes part in).
 * - `POST /api/v1/message/query` `{ chatGuid, after, before, limit, offset, sort, with }`:
 *   routers/messageRouter.ts query (`after`/`before` inclusive ms bounds; an unknown
 *   chatGuid ends without a body: 404).
 * - `GET /api/v1/message/:guid`: routers/messageRouter.ts find (404 "Message does not exist!").
 * - `POST /api/v1/message/attachment`, multipart `chatGuid`, `tempGuid`, `name`, `method` and
 *   the file as `attachment`: validated as messageValidator.ts validateAttachment does
 *   (chatGuid and name required; apple-script needs a tempGuid; a missing or empty file is
 *   400 "Attachment not provided or was empty!"); messageRouter.ts sendAttachment sends it
 *   as a message of its own with no text and that attachment (named `name`), answered
 *   "Attachment sent!" with the message. `uploads` keeps what was sent.
 * - `GET /api/v1/attachment/:guid/download`: routers/attachmentRouter.ts download, the file
 *   with its MIME type (404 "Attachment does not exist!").
 * - Error shapes: api/http/api/v1/responses/errors.ts; a wrong password is 401
 *   (middleware/authMiddleware.ts).
 * - The Private API (`privateApi`, switchable): helpers/utils.ts checkPrivateApiStatus fails
 *   with "iMessage Private API is not enabled!" or "... Helper is not connected!". Routes with
 *   middleware/privateApiMiddleware.ts (react, chat typing and read) answer it as 500 "Please
 *   make sure you have completed the setup for the Private API, and your helper is connected!"
 *   before their body is validated (httpRoutes.ts buildMiddleware: middleware, then validators);
 *   edit and unsend check it inside the interface, after validation and the message lookup,
 *   answered with their router's summary ("Message Edit Error", "Unsend Message Error").
 * - `POST /api/v1/message/react` `{ chatGuid, selectedMessageGuid, reaction, partIndex }`:
 *   validators/messageValidator.ts sendReactionRules (reaction in
 *   api/interfaces/messageInterface.ts possibleReactions: love … question and -love …
 *   -question); routers/messageRouter.ts react (400 "Selected message does not exist!");
 *   MessageInterface.sendReaction stores `Loved “<text>”` (api/apple/mappings.ts
 *   reactionTextMap, negativeReactionTextMap) with associatedMessageGuid `p:<part>/<guid>`,
 *   announced once as `new-message` (no tempGuid), answered 200 "Reaction sent!".
 * - `POST|DELETE /api/v1/chat/:guid/typing`: routers/chatRouter.ts startTyping and stopTyping,
 *   which at v1.9.9 both call ChatInterface.startTyping: the DELETE starts typing too.
 *   MessageInterface.sendMessageSync (message/text) stops it in that chat (typingCache);
 *   attachments and chat/new do not. No body, 200 even for an unknown chat (fire and forget).
 * - `POST /api/v1/chat/:guid/read`: ChatInterface.markRead, then `chat-read-status-changed`
 *   `{ chatGuid, read: true }`; 200 "Successfully marked chat as read!".
 * - `POST /api/v1/message/:guid/edit` `{ editedMessage, backwardsCompatibilityMessage,
 *   partIndex }` and `/unsend` `{ partIndex }`: messageValidator.ts editParamRules and
 *   unsendParamRules; messageRouter.ts editMessage and unsendMessage (400 "Selected message
 *   does not exist!", "Associated chat not found!"); MessageInterface.editMessage and
 *   unsendMessage wait for a newer dateEdited and answer the message as it is then (200
 *   "Message edited!", "Message unsent!"), unchanged when Apple ignored it (`appleIgnores`:
 *   helpers/utils.ts resultAwaiter returns the last data at its timeout; the real one after
 *   about 43 s, this one at once). An unsend empties the text, sets partCount 0 and
 *   retractedParts (databases/imessage/entity/Message.ts hasUnsentParts).
 * - `GET /api/v1/server/info`: api/interfaces/generalInterface.ts getServerMetadata
 *   (`private_api`, `helper_connected`).
 * - Webhooks: a sent message is announced twice as `new-message`, once when it appears in
 *   chat.db (index.ts handleNewMessage, no tempGuid) and once when it matches the waiting
 *   send (index.ts emitMessageMatch, with the tempGuid); services/webhookService posts
 *   `{ type, data }` to each webhook URL. Webhook messages are serialized for a notification
 *   (api/serializers/MessageSerializer.ts: attributedBody, messageSummaryInfo and payloadData
 *   null); `updated-message` has no `chats` and no tempGuid (index.ts handleUpdatedMessage).
 *   The contact's side: `contactReacts` (a tapback `new-message`), `contactTypes`
 *   (`typing-indicator` `{ display, guid }`, privateApi/eventHandlers/
 *   PrivateApiTypingEventHandler.ts), `contactReads`, `contactEdits`, `contactUnsends`
 *   (`updated-message`, databases/imessage/pollers/MessagePoller.ts poll); `late` sends the
 *   change as `new-message`, as the server does once its event cache forgot the guid after
 *   an hour (databases/imessage/pollers/index.ts getMessageEvent, trimEventCache).
 *
 * It records every request (method, path, query, headers, parsed body).
 */
import { randomUUID } from "node:crypto";

export interface BbHandle {
  originalROWID: number;
  address: string;
  service: string;
  country: string | null;
  uncanonicalizedId: string | null;
}

/** api/serializers/ChatSerializer.ts: style 43 is a group chat, 45 a one-to-one chat. */
export interface BbChat {
  originalROWID: number;
  guid: string;
  style: number;
  chatIdentifier: string;
  isArchived: boolean;
  displayName: string | null;
  /** The addresses in the chat (the fake's own record; serialized as handles when asked). */
  participants: string[];
}

export interface BbMessage {
  originalROWID: number;
  guid: string;
  text: string | null;
  handle: BbHandle | null;
  handleId: number;
  attachments: unknown[];
  subject: string | null;
  error: number;
  dateCreated: number;
  dateRead: number | null;
  dateDelivered: number | null;
  isFromMe: boolean;
  isDelivered: boolean;
  isArchived: boolean;
  itemType: number;
  associatedMessageGuid: string | null;
  associatedMessageType: string | null;
  expressiveSendStyleId: string | null;
  threadOriginatorGuid: string | null;
  hasPayloadData: boolean;
  chats?: { originalROWID: number; guid: string; style: number; chatIdentifier: string; isArchived: boolean; displayName: string | null; participants?: unknown[] }[];
  tempGuid?: string | null;
  /** High Sierra+: parsed only in HTTP answers; null in webhooks (MessageSerializer.ts). */
  attributedBody: unknown[] | null;
  messageSummaryInfo: { retractedParts?: number[] }[] | null;
  payloadData: unknown[] | null;
  /** A group change (MessageSerializer.ts convert): its kind, the new name, and the handle added or removed. */
  groupTitle?: string | null;
  groupActionType?: number;
  otherHandle?: number;
  /** Ventura+ (MessageSerializer.ts convert). */
  dateEdited: number | null;
  dateRetracted: number | null;
  partCount: number;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The parsed JSON body, or a multipart form's text fields; undefined when none or neither. */
  body: any;
  /** A multipart form's files by field name. */
  files?: Record<string, File>;
  rawBody: string;
}

let rowid = 1000;

/** A message as a BlueBubbles server serializes it (api/serializers/MessageSerializer.ts). */
export function bbMessage(p: {
  address: string;
  text: string | null;
  guid?: string;
  isFromMe?: boolean;
  dateCreated?: number;
  dateDelivered?: number | null;
  dateRead?: number | null;
  error?: number;
  tempGuid?: string | null;
  /** The chat it belongs to; default the one-to-one iMessage chat with `address`. */
  chatGuid?: string;
  /** databases/transformers/MessageTypeTransformer.ts: "love", "like", "-love", … for tapbacks. */
  associatedMessageType?: string | null;
  associatedMessageGuid?: string | null;
  attachments?: unknown[];
  /** A threaded reply: the guid of the message it answers. */
  threadOriginatorGuid?: string | null;
}): BbMessage {
  rowid++;
  const chatGuid = p.chatGuid ?? `iMessage;-;${p.address}`;
  const group = chatGuid.includes(";+;");
  const message: BbMessage = {
    originalROWID: rowid,
    guid: p.guid ?? randomUUID().toUpperCase(),
    text: p.text,
    handle: { originalROWID: 7, address: p.address, service: "iMessage", country: "us", uncanonicalizedId: null },
    handleId: 7,
    attachments: p.attachments ?? [],
    subject: null,
    error: p.error ?? 0,
    dateCreated: p.dateCreated ?? Date.now(),
    dateRead: p.dateRead ?? null,
    dateDelivered: p.dateDelivered ?? null,
    isFromMe: p.isFromMe ?? false,
    isDelivered: p.dateDelivered != null,
    isArchived: false,
    itemType: 0,
    associatedMessageGuid: p.associatedMessageGuid ?? null,
    associatedMessageType: p.associatedMessageType ?? null,
    expressiveSendStyleId: null,
    threadOriginatorGuid: p.threadOriginatorGuid ?? null,
    hasPayloadData: false,
    // ChatSerializer.ts convert for a notification: six fields, no participants.
    chats: [{ originalROWID: 12, guid: chatGuid, style: group ? 43 : 45, chatIdentifier: group ? chatGuid.split(";+;")[1]! : p.address, isArchived: false, displayName: null }],
    attributedBody: null,
    messageSummaryInfo: null,
    payloadData: null,
    dateEdited: null,
    dateRetracted: null,
    partCount: 1,
  };
  if (p.tempGuid !== undefined) message.tempGuid = p.tempGuid;
  return message;
}

/**
 * A message as a webhook carries it (MessageSerializer.ts serialize for a notification:
 * attributedBody, messageSummaryInfo and payloadData null); an `updated-message` also
 * without `chats` and tempGuid (index.ts handleUpdatedMessage: includeChats false).
 */
export function bbNotification(message: BbMessage, type: "new-message" | "updated-message" = "new-message"): BbMessage {
  const { chats, tempGuid, ...rest } = message;
  const data: BbMessage = { ...rest, attributedBody: null, messageSummaryInfo: null, payloadData: null };
  if (type === "new-message") {
    if (chats) data.chats = chats;
    if (tempGuid !== undefined) data.tempGuid = tempGuid;
  }
  return data;
}

/** `message` with `changes`, as an `updated-message` webhook carries it. */
export function bbUpdated(message: BbMessage, changes: Partial<BbMessage> = {}): BbMessage {
  return bbNotification({ ...message, ...changes }, "updated-message");
}

/** api/apple/mappings.ts reactionTextMap and negativeReactionTextMap: the text the Mac stores for a tapback. */
const REACTION_TEXT: Record<string, string> = {
  love: "Loved",
  like: "Liked",
  dislike: "Disliked",
  laugh: "Laughed at",
  emphasize: "Emphasized",
  question: "Questioned",
  "-love": "Removed a heart",
  "-like": "Removed a like",
  "-dislike": "Removed a dislike",
  "-laugh": "Removed a laugh",
  "-emphasize": "Removed an exclamation",
  "-question": "Removed a question mark",
};

/** api/interfaces/messageInterface.ts possibleReactions: what message/react accepts. */
export const BB_REACTIONS = Object.keys(REACTION_TEXT);

/**
 * A tapback on `target` as chat.db holds it: associatedMessageGuid `p:<part>/<guid>`, or
 * `bp:<guid>` on a balloon (app or link) message; associatedMessageType as
 * databases/transformers/MessageTypeTransformer.ts names it ("love" … "-question",
 * "sticker", or an unmapped number such as "2006" for an emoji tapback).
 */
export function bbTapback(p: { target: BbMessage; type: string; address: string; isFromMe?: boolean; partIndex?: number; balloon?: boolean; chatGuid?: string }): BbMessage {
  const verb = REACTION_TEXT[p.type];
  // MessageInterface.sendReaction: `<verb> “<text>”`; an emoji tapback's text is the server's to choose.
  const text = verb ? `${verb} “${p.target.text ?? ""}”` : `Reacted to “${p.target.text ?? ""}”`;
  return bbMessage({
    address: p.address,
    text,
    isFromMe: p.isFromMe ?? false,
    associatedMessageType: p.type,
    associatedMessageGuid: p.balloon ? `bp:${p.target.guid}` : `p:${p.partIndex ?? 0}/${p.target.guid}`,
    ...(p.chatGuid ? { chatGuid: p.chatGuid } : {}),
  });
}

/** An attachment as api/serializers/AttachmentSerializer.ts lists it on a message. */
export function bbAttachment(name = "IMG_0001.heic", mimeType = "image/heic", totalBytes = 123456): { guid: string; transferName: string; mimeType: string; totalBytes: number; originalROWID: number } {
  return { originalROWID: ++rowid, guid: randomUUID().toUpperCase(), transferName: name, mimeType, totalBytes };
}

/** What the fake answers to one send (message/text or chat/new). */
export type SendReply =
  /**
   * The send goes through: after `delayMs` the message appears on the Mac (webhooks sent)
   * and the answer is 200 with it, as messageRouter.ts sendText answers.
   */
  | { kind: "sent"; guid?: string; store?: boolean; delayMs?: number }
  /** An error envelope of responses/errors.ts with this status. */
  | { kind: "error"; httpStatus: number; message: string; errorType?: string; error?: string };

export type QueryReply = { kind: "messages" } | { kind: "error"; httpStatus: number; message: string };

export interface FakeBlueBubbles {
  /** For BLUEBUBBLES_URL, e.g. http://127.0.0.1:43121 */
  url: string;
  port: number;
  password: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  /** message/text and chat/new requests: every send attempt. */
  readonly sends: RecordedRequest[];
  readonly queries: RecordedRequest[];
  /** The Mac's messages (chat.db): what message/query searches. Tests may push to it. */
  messages: BbMessage[];
  /** The Mac's chats by guid. */
  chats: Map<string, BbChat>;
  /** The messages the Mac actually sent, in order. */
  sent: BbMessage[];
  /** Webhook URLs the server posts events to (webhookService). */
  webhooks: string[];
  /** Files sent with message/attachment, in order: the chat, the name and the bytes. */
  uploads: { chatGuid: string; name: string; type: string; bytes: Uint8Array }[];
  /** A file on the Mac that attachment/:guid/download serves; returns it as a message lists it. */
  addAttachmentFile(bytes: Uint8Array, mimeType: string, name?: string): ReturnType<typeof bbAttachment>;
  /** Adds a one-to-one chat with `address` (as one that exists on the Mac already). */
  addChat(address: string, service?: string): BbChat;
  /** Adds a group chat with these addresses (and `name`, its displayName). */
  addGroup(addresses: string[], name?: string): BbChat;
  /** `address` renames the group: the change's item, `group-name-change` and `new-message`. */
  contactRenamesGroup(chat: BbChat, address: string, name: string): Promise<BbMessage>;
  /** `address` leaves the group: the change's item, `participant-left` and `new-message`. */
  contactLeavesGroup(chat: BbChat, address: string): Promise<BbMessage>;
  /** Posts `{ type, data }` to every webhook URL; resolves when all answered. */
  emit(type: string, data: unknown): Promise<void>;
  /**
   * helpers/utils.ts checkPrivateApiStatus: the server's `enable_private_api` setting and its
   * helper's connection (api/privateApi/PrivateApiService.ts `helper`). Tests may switch them.
   */
  privateApi: { enabled: boolean; helperConnected: boolean };
  /**
   * The addresses Apple says have iMessage (`GET /api/v1/handle/availability/imessage`,
   * routers/handleRouter.ts getMessagesAvailability: PrivateApiMiddleware, then
   * handleInterface.ts getMessagesAvailability answers `{ data: { available } }`).
   */
  imessage: Set<string>;
  /** Chats where the Mac shows our typing indicator now (the server's typingCache). */
  typing: Set<string>;
  /** Every start of our typing the helper was told, in order (a DELETE is one too). */
  typingStarts: string[];
  /** Chats marked read through chat/:guid/read, in order. */
  reads: string[];
  /** Apple ignores our edits and unsends (past its window or limits): the server still answers 200. */
  appleIgnores: boolean;
  /** The contact reacts (`type` as the serializer names it) to a message: a tapback `new-message`. */
  contactReacts(target: BbMessage, type: string, opts?: { partIndex?: number; balloon?: boolean }): Promise<BbMessage>;
  /** The helper reports the contact typing or not in their one-to-one chat (`typing-indicator`). */
  contactTypes(address: string, display: boolean): Promise<void>;
  /** The contact read our message: `dateRead` set, `updated-message` (one-to-one chats only). */
  contactReads(message: BbMessage, opts?: { at?: number; late?: boolean }): Promise<BbMessage>;
  /** The contact edited their message: new text, newer `dateEdited`, `updated-message`. */
  contactEdits(message: BbMessage, text: string, opts?: { late?: boolean }): Promise<BbMessage>;
  /** The contact unsent their message: newer `dateEdited`, no text, partCount 0, `updated-message`. */
  contactUnsends(message: BbMessage, opts?: { late?: boolean }): Promise<BbMessage>;
  replyToSend(r: SendReply | ((req: RecordedRequest) => SendReply | Promise<SendReply>)): void;
  replyToQuery(r: QueryReply): void;
  /** Waits (bounded) until the predicate holds over the recorded requests. */
  waitFor(what: string, pred: (requests: RecordedRequest[]) => boolean, ms?: number): Promise<void>;
  stop(): Promise<void>;
}

/** responses/errors.ts: `{ status, message, error: { type, message } }`. */
function bbError(httpStatus: number, message: string, type = "Server Error", error = message): Response {
  return Response.json({ status: httpStatus, message, error: { type, message: error } }, { status: httpStatus });
}

/** responses/errors.ts BadRequest, as validators/index.ts ValidateInput and messageValidator.ts throw it. */
function badRequest(error: string): Response {
  return bbError(400, "You've made a bad request! Please check your request params & body", "Validation Error", error);
}

/**
 * validators/index.ts ValidateInput with validatorjs' English messages: the first failing
 * rule of the first failing field, in the rules' order. Only the rules these routes use.
 */
function validate(body: any, rules: Record<string, string>): Response | null {
  const data = body && typeof body === "object" ? body : {};
  for (const [field, rule] of Object.entries(rules)) {
    const value = data[field];
    const present = value !== undefined && value !== null && value !== "";
    const parts = rule.split("|");
    if (!present) {
      if (parts.includes("required")) return badRequest(`The ${field} field is required.`);
      continue;
    }
    for (const part of parts) {
      if (part === "string" && typeof value !== "string") return badRequest(`The ${field} must be a string.`);
      if (part.startsWith("in:") && !part.slice(3).split(",").includes(String(value))) return badRequest(`The selected ${field} is invalid.`);
      if (part === "numeric" && !Number.isFinite(Number(value))) return badRequest(`The ${field} must be a number.`);
      if (part === "min:0" && Number(value) < 0) return badRequest(`The ${field} must be at least 0.`);
    }
  }
  return null;
}

/** messagePromise.ts: the server gives up waiting for a sent message after 2 minutes. */
const SERVER_SEND_WAIT_MS = 2 * 60_000;

/** `privateApi`: the server's Private API is enabled and its helper connected (needed for threaded replies, reactions, typing, read, edit, unsend). */
export function startFakeBlueBubbles(opts: { password?: string; privateApi?: boolean } = {}): FakeBlueBubbles {
  const privateApi = { enabled: opts.privateApi ?? false, helperConnected: opts.privateApi ?? false };
  /** helpers/utils.ts checkPrivateApiStatus: the text of the Error it throws, or null. */
  const privateApiError = () =>
    !privateApi.enabled ? "iMessage Private API is not enabled!" : !privateApi.helperConnected ? "iMessage Private API Helper is not connected!" : null;
  /** middleware/privateApiMiddleware.ts: rethrown as an IMessageError with this summary. */
  const privateApiMiddleware = () => {
    const error = privateApiError();
    return error ? bbError(500, "Please make sure you have completed the setup for the Private API, and your helper is connected!", "iMessage Error", error) : null;
  };
  const imessage = new Set<string>();
  const typing = new Set<string>();
  const typingStarts: string[] = [];
  const reads: string[] = [];
  /** PrivateApiTypingEventHandler.ts cache: the last value per chat and when it was seen. */
  const typingSeen = new Map<string, { display: boolean; at: number }>();
  let appleIgnores = false;
  const password = opts.password ?? `bb-${randomUUID()}`;
  const requests: RecordedRequest[] = [];
  const messages: BbMessage[] = [];
  const chats = new Map<string, BbChat>();
  const sent: BbMessage[] = [];
  const webhooks: string[] = [];
  /** httpService.sendCache: tempGuids being sent. */
  const sendCache = new Set<string>();
  let sendReply: SendReply | ((req: RecordedRequest) => SendReply | Promise<SendReply>) = { kind: "sent" };
  let queryReply: QueryReply = { kind: "messages" };
  const uploads: FakeBlueBubbles["uploads"] = [];
  const files = new Map<string, { bytes: Uint8Array; mimeType: string }>();

  function addChat(address: string, service = "iMessage"): BbChat {
    const guid = `${service};-;${address}`;
    const chat = chats.get(guid) ?? { originalROWID: ++rowid, guid, style: 45, chatIdentifier: address, isArchived: false, displayName: null, participants: [address] };
    chats.set(guid, chat);
    return chat;
  }
  function addGroup(addresses: string[], name?: string): BbChat {
    const id = `chat${Math.floor(Math.random() * 1e15)}`;
    const chat = { originalROWID: ++rowid, guid: `iMessage;+;${id}`, style: 43, chatIdentifier: id, isArchived: false, displayName: name ?? null, participants: [...addresses] };
    chats.set(chat.guid, chat);
    return chat;
  }

  /** MessagePoller.ts handleGroupChanges: the event each group change item is announced as. */
  const GROUP_CHANGE_EVENT: Record<string, string> = { "1:0": "participant-added", "1:1": "participant-removed", "2:0": "group-name-change", "3:0": "participant-left" };

  /**
   * A group change recorded on the Mac (an item with no text, by `from`, or by us when null),
   * announced as its event and as `new-message`, as index.ts startChatListeners and the
   * poller's processMessageEvent do; notifications carry the chat without participants.
   */
  async function groupChange(chat: BbChat, from: string | null, itemType: number, groupActionType: number, extra: Partial<BbMessage> = {}): Promise<BbMessage> {
    const item: BbMessage = { ...bbMessage({ address: from ?? chat.participants[0]!, text: null, isFromMe: from === null, chatGuid: chat.guid }), itemType, groupActionType, ...extra };
    item.chats = [{ ...item.chats![0]!, displayName: chat.displayName }];
    messages.push(item);
    await emit(GROUP_CHANGE_EVENT[`${itemType}:${groupActionType}`]!, bbNotification(item));
    await emit("new-message", bbNotification(item));
    return item;
  }
  const chatJson = (c: BbChat, withParticipants = false) => ({
    originalROWID: c.originalROWID,
    guid: c.guid,
    style: c.style,
    chatIdentifier: c.chatIdentifier,
    isArchived: c.isArchived,
    displayName: c.displayName,
    ...(withParticipants ? { participants: c.participants.map((a) => ({ address: a, service: c.guid.split(";")[0] })) } : {}),
  });

  async function emit(type: string, data: unknown): Promise<void> {
    await Promise.all(
      webhooks.map((url) =>
        fetch(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ type, data }) }).then(
          (r) => r.text(),
          () => undefined,
        ),
      ),
    );
  }

  /**
   * The Mac sends `text` in `chat` (after the test's delay): the message appears in chat.db,
   * index.ts handleNewMessage announces it (no tempGuid), then emitMessageMatch announces it
   * with the tempGuid of the waiting send.
   */
  async function macSends(
    chat: BbChat,
    text: string | null,
    tempGuid: string,
    reply: Extract<SendReply, { kind: "sent" }>,
    extra: { attachments?: unknown[]; threadOriginatorGuid?: string | null } = {},
  ): Promise<BbMessage | null> {
    const delay = reply.delayMs ?? 0;
    if (delay > 0) await Bun.sleep(Math.min(delay, SERVER_SEND_WAIT_MS));
    if (delay >= SERVER_SEND_WAIT_MS) return null;
    const address = chat.participants[0]!;
    const message = bbMessage({
      address,
      text,
      isFromMe: true,
      chatGuid: chat.guid,
      attachments: extra.attachments ?? [],
      threadOriginatorGuid: extra.threadOriginatorGuid ?? null,
      ...(reply.guid ? { guid: reply.guid } : {}),
    });
    sent.push(message);
    if (reply.store !== false) messages.push(message);
    await emit("new-message", bbNotification(message));
    await emit("new-message", bbNotification({ ...message, tempGuid }));
    return message;
  }

  /** The Mac's copy of a message (chat.db): the stored one, else this one, stored now. */
  function onMac(message: BbMessage): BbMessage {
    const stored = messages.find((m) => m.guid === message.guid);
    if (stored) return stored;
    messages.push(message);
    return message;
  }

  /** A later dateEdited than the message has (the pollers compare it with `>`). */
  const nextEdit = (m: BbMessage) => Math.max(Date.now(), (m.dateEdited ?? 0) + 1);

  /** Messages.app edits or unsends a message in chat.db (Message.ts hasUnsentParts, isFullyUnsent). */
  function change(m: BbMessage, text: string | null): void {
    m.dateEdited = nextEdit(m);
    if (text === null) {
      m.text = null;
      m.partCount = 0;
      m.messageSummaryInfo = [{ retractedParts: [0] }];
    } else {
      m.text = text;
    }
  }

  /** index.ts handleUpdatedMessage, or handleNewMessage once the poller's event cache forgot the guid. */
  const announceChange = (m: BbMessage, late = false) =>
    late ? emit("new-message", bbNotification(m)) : emit("updated-message", bbUpdated(m));

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      // koa-body: multipart forms (attachments) and JSON.
      const multipart = (req.headers.get("content-type") ?? "").startsWith("multipart/form-data");
      const form = multipart ? await req.formData().catch(() => undefined) : undefined;
      const rawBody = multipart ? "" : await req.text();
      let body: any;
      const formFiles: Record<string, File> = {};
      if (form) {
        body = {};
        for (const [name, value] of form.entries()) {
          if (typeof value === "string") body[name] = value;
          else formFiles[name] = value;
        }
      } else {
        try {
          body = rawBody ? JSON.parse(rawBody) : undefined;
        } catch {
          body = undefined;
        }
      }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v));
      const recorded: RecordedRequest = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body, rawBody, ...(form ? { files: formFiles } : {}) };
      requests.push(recorded);

      // middleware/authMiddleware.ts: the password in ?guid, ?password or ?token.
      const given = url.searchParams.get("guid") ?? url.searchParams.get("password") ?? url.searchParams.get("token");
      if (given !== password) {
        return Response.json(
          { status: 401, message: "You are not authorized to access this resource", error: { type: "Authentication Error", message: "Unauthorized" } },
          { status: 401 },
        );
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/text") {
        // validators/messageValidator.ts validateText.
        if (!body || typeof body !== "object") return badRequest("The chatGuid field is required.");
        if (typeof body.chatGuid !== "string" || !body.chatGuid) return badRequest("The chatGuid field is required.");
        if (body.method !== undefined && body.method !== "apple-script" && body.method !== "private-api") return badRequest("The selected method is invalid.");
        if (body.selectedMessageGuid !== undefined && typeof body.selectedMessageGuid !== "string") return badRequest("The selectedMessageGuid must be a string.");
        if (body.partIndex !== undefined && !(Number(body.partIndex) >= 0)) return badRequest("The partIndex must be at least 0.");
        // An effect, a subject or a reply implies the Private API, whatever method was asked.
        const method = body.effectId || body.subject || body.selectedMessageGuid ? "private-api" : (body.method ?? "apple-script");
        if (method === "apple-script" && (typeof body.tempGuid !== "string" || !body.tempGuid)) {
          return badRequest("A 'tempGuid' is required when sending via AppleScript");
        }
        if (method === "apple-script" && (typeof body.message !== "string" || !body.message)) {
          return badRequest("A 'message' is required when sending via AppleScript");
        }
        if (method === "private-api" && !body.message && !body.subject) {
          return badRequest("A 'message' or 'subject' is required when sending via the Private API");
        }
        if (sendCache.has(body.tempGuid)) return badRequest(`Message is already queued to be sent! (Temp GUID: ${body.tempGuid})`);
        const privateApiOff = method === "private-api" ? privateApiError() : null;
        if (privateApiOff) {
          // messageRouter.ts sendText: any other error becomes IMessageError with its text.
          return bbError(500, "Message Send Error", "iMessage Error", privateApiOff);
        }
        const reply = typeof sendReply === "function" ? await sendReply(recorded) : sendReply;
        if (reply.kind === "error") return bbError(reply.httpStatus, reply.message, reply.errorType, reply.error);
        const chat = chats.get(body.chatGuid);
        if (!chat) {
          // api/apple/actions.ts sendMessage: `chat id "<guid>"` does not exist and the
          // fallback script cannot send either (an `any` service is not a service type:
          // scripts.ts buildServiceScript, the server's issue #777); messageRouter.ts sendText
          // answers IMessageError with the script's error.
          return bbError(500, "Message Send Error", "iMessage Error", `execution error: Messages got an error: Can’t get chat id "${body.chatGuid}". (-1728)`);
        }
        // messageInterface.ts sendMessageSync: a send stops our typing in that chat.
        typing.delete(chat.guid);
        sendCache.add(body.tempGuid);
        try {
          const message = await macSends(chat, body.message, body.tempGuid, reply, { threadOriginatorGuid: method === "private-api" ? (body.selectedMessageGuid ?? null) : null });
          if (!message) {
            // messagePromise.ts: "Message send timeout" rejects without a message.
            return Response.json(
              { status: 500, message: "Message Send Error", error: { type: "iMessage Error", message: "Failed to send message! See attached message error code." }, data: null },
              { status: 500 },
            );
          }
          // messageRouter.ts sendText injects the tempGuid into the answer.
          return Response.json({ status: 200, message: "Message sent!", data: { ...message, tempGuid: body.tempGuid } });
        } finally {
          sendCache.delete(body.tempGuid);
        }
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/attachment") {
        // validators/messageValidator.ts validateAttachment (sendAttachmentRules).
        if (!body || typeof body.chatGuid !== "string" || !body.chatGuid) return badRequest("The chatGuid field is required.");
        if (typeof body.name !== "string" || !body.name) return badRequest("The name field is required.");
        const method = body.method ?? "apple-script";
        if (method !== "apple-script" && method !== "private-api") return badRequest("The selected method is invalid.");
        if (method === "apple-script" && (typeof body.tempGuid !== "string" || !body.tempGuid)) {
          return badRequest("A 'tempGuid' is required when sending via AppleScript");
        }
        if (sendCache.has(body.tempGuid)) return badRequest("Attachment is already queued to be sent!");
        const file = formFiles.attachment;
        if (!file || file.size === 0) return badRequest("Attachment not provided or was empty!");
        const reply = typeof sendReply === "function" ? await sendReply(recorded) : sendReply;
        if (reply.kind === "error") return bbError(reply.httpStatus, reply.message, reply.errorType, reply.error);
        const chat = chats.get(body.chatGuid);
        // messageRouter.ts sendAttachment: anything thrown that is not a message is an IMessageError.
        if (!chat) return bbError(500, "Attachment Send Error", "iMessage Error", `execution error: Messages got an error: Can’t get chat id "${body.chatGuid}". (-1728)`);
        const bytes = new Uint8Array(await file.arrayBuffer());
        uploads.push({ chatGuid: body.chatGuid, name: body.name, type: file.type, bytes });
        const attachment = bbAttachment(body.name, file.type || "application/octet-stream", bytes.length);
        files.set(attachment.guid, { bytes, mimeType: attachment.mimeType });
        sendCache.add(body.tempGuid);
        try {
          const message = await macSends(chat, null, body.tempGuid, reply, { attachments: [attachment] });
          if (!message) {
            return Response.json(
              { status: 500, message: "Attachment Send Error", error: { type: "iMessage Error", message: "Failed to send attachment! See attached message error code." }, data: null },
              { status: 500 },
            );
          }
          return Response.json({ status: 200, message: "Attachment sent!", data: message });
        } finally {
          sendCache.delete(body.tempGuid);
        }
      }

      const download = /^\/api\/v1\/attachment\/([^/]+)\/download$/.exec(url.pathname);
      if (req.method === "GET" && download) {
        const file = files.get(decodeURIComponent(download[1]!));
        if (!file) return bbError(404, "The requested resource was not found", "Database Error", "Attachment does not exist!");
        // api/http/api/v1/responses/fileStream.ts: the file with its MIME type.
        return new Response(file.bytes as Uint8Array<ArrayBuffer>, { headers: { "Content-Type": file.mimeType } });
      }

      if (req.method === "POST" && url.pathname === "/api/v1/chat/new") {
        // validators/chatValidator.ts validateCreate, then chatInterface.ts create.
        if (!body || !Array.isArray(body.addresses)) return badRequest("The addresses field is required.");
        const service = body.service ?? "iMessage";
        if (service !== "iMessage" && service !== "SMS") return badRequest("The selected service is invalid.");
        const unhandled = (error: string) =>
          // middleware/errorMiddleware.ts: an Error that is not an HTTPError.
          Response.json({ status: 500, message: "An unhandled error has occurred!", error: { type: "Server Error", message: error } }, { status: 500 });
        if (body.addresses.length === 0) return unhandled("No addresses provided!");
        const method = body.method ?? "apple-script";
        if (method === "apple-script" && body.addresses.length > 1) return unhandled("Cannot create group chats on macOS Big Sur or newer!");
        if (method === "private-api") {
          // chatInterface.ts create, then createWithPrivateApi: a message, then checkPrivateApiStatus.
          if (typeof body.message !== "string" || !body.message) return unhandled("A message is required when creating chats with the Private API!");
          const off = privateApiError();
          if (off) return unhandled(off);
          const reply = typeof sendReply === "function" ? await sendReply(recorded) : sendReply;
          if (reply.kind === "error") return bbError(reply.httpStatus, reply.message, reply.errorType, reply.error);
          const chat = body.addresses.length > 1 ? addGroup(body.addresses.map(String)) : addChat(String(body.addresses[0]), service);
          const message = await macSends(chat, body.message, body.tempGuid ?? null, reply);
          if (!message) return unhandled("Failed to create new chat! Message not found after 30 seconds!");
          return Response.json({
            status: 200,
            message: "Successfully created chat!",
            data: { ...chatJson(chat, true), messages: [{ ...message, chats: undefined, ...(body.tempGuid ? { tempGuid: body.tempGuid } : {}) }] },
          });
        }
        if (typeof body.message !== "string" || !body.message) return unhandled("A message is required when creating chats on macOS Big Sur or newer!");
        const reply = typeof sendReply === "function" ? await sendReply(recorded) : sendReply;
        if (reply.kind === "error") return bbError(reply.httpStatus, reply.message, reply.errorType, reply.error);
        const chat = addChat(String(body.addresses[0]), service);
        const message = await macSends(chat, body.message, body.tempGuid ?? null, reply);
        if (!message) return unhandled("Message send timeout");
        return Response.json({
          status: 200,
          message: "Successfully created chat!",
          data: { ...chatJson(chat, true), messages: [{ ...message, chats: undefined, ...(body.tempGuid ? { tempGuid: body.tempGuid } : {}) }] },
        });
      }

      if (req.method === "POST" && url.pathname === "/api/v1/handle/query") {
        // handleInterface.ts get: repo getHandles matches `handle.id LIKE %<address without +>`.
        const address = typeof body?.address === "string" ? body.address.replace("+", "") : "";
        const withChats = Array.isArray(body?.with) && body.with.some((w: string) => w === "chat" || w === "chats");
        const addresses = new Set([...chats.values()].flatMap((c) => c.participants).filter((a) => a.endsWith(address)));
        const data = [...addresses].map((a, i) => ({
          originalROWID: 7 + i,
          address: a,
          service: "iMessage",
          uncanonicalizedId: null,
          country: "us",
          ...(withChats ? { chats: [...chats.values()].filter((c) => c.participants.includes(a)).map((c) => chatJson(c)) } : {}),
        }));
        return Response.json({ status: 200, message: "Success", data, metadata: { total: data.length, offset: 0, limit: 100, count: data.length } });
      }

      if (req.method === "GET" && url.pathname.startsWith("/api/v1/message/") && url.pathname.split("/").length === 5) {
        const guid = decodeURIComponent(url.pathname.split("/")[4]!);
        const found = messages.find((m) => m.guid === guid);
        if (!found) return bbError(404, "The requested resource was not found", "Database Error", "Message does not exist!");
        return Response.json({ status: 200, message: "Success", data: found });
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/query") {
        if (queryReply.kind === "error") return bbError(queryReply.httpStatus, queryReply.message);
        const q = (body ?? {}) as { chatGuid?: string; after?: number; before?: number; limit?: number; offset?: number; sort?: string; with?: string[] };
        // messageRouter.ts query: for an unknown chatGuid it builds a Success but never sends
        // it, so Koa answers its default 404.
        if (q.chatGuid && !chats.has(q.chatGuid)) return new Response("Not Found", { status: 404 });
        const limit = Math.min(Number(q.limit ?? 100), 1000);
        const offset = Number(q.offset ?? 0);
        // `after`/`before` are inclusive date bounds, ignored when falsy.
        let found = messages.filter(
          (m) =>
            (!q.after || m.dateCreated >= Number(q.after)) &&
            (!q.before || m.dateCreated <= Number(q.before)) &&
            (!q.chatGuid || (m.chats ?? []).some((c) => c.guid === q.chatGuid)),
        );
        found = found.sort((a, b) => a.dateCreated - b.dateCreated || a.originalROWID - b.originalROWID);
        if ((q.sort ?? "DESC").toUpperCase() === "DESC") found.reverse();
        const page = found.slice(offset, offset + limit);
        const withChats = Array.isArray(q.with) && q.with.some((w) => w === "chat" || w === "chats");
        const data = page.map((m) => {
          const { chats: c, tempGuid: _t, ...rest } = m;
          return withChats ? { ...rest, chats: c } : rest;
        });
        return Response.json({
          status: 200,
          message: "Successfully fetched messages!",
          data,
          metadata: { offset, limit, total: found.length, count: data.length },
        });
      }

      if (req.method === "GET" && url.pathname === "/api/v1/handle/availability/imessage") {
        // httpRoutes.ts: protected, PrivateApiMiddleware, then HandleValidator.validateAvailability (address: string|required).
        const off = privateApiMiddleware();
        if (off) return off;
        const address = url.searchParams.get("address");
        if (!address) return badRequest("The address field is required.");
        return Response.json({ status: 200, message: "Success", data: { available: imessage.has(address) } });
      }

      if (req.method === "GET" && url.pathname === "/api/v1/server/info") {
        // routers/serverRouter.ts getInfo, generalInterface.ts getServerMetadata (the fields Textwire may read).
        return Response.json({
          status: 200,
          message: "Success",
          data: { os_version: "14.4", server_version: "1.9.9", private_api: privateApi.enabled, proxy_service: "Dynamic DNS", helper_connected: privateApi.helperConnected },
        });
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/react") {
        // httpRoutes.ts: PrivateApiMiddleware, then messageValidator.ts validateReaction, then messageRouter.ts react.
        const off = privateApiMiddleware();
        if (off) return off;
        const invalid = validate(body, {
          chatGuid: "required|string",
          selectedMessageGuid: "required|string",
          reaction: `required|string|in:${BB_REACTIONS.join(",")}`,
          partIndex: "numeric|min:0",
        });
        if (invalid) return invalid;
        const target = messages.find((m) => m.guid === body.selectedMessageGuid);
        if (!target) return badRequest("Selected message does not exist!");
        const chat = chats.get(body.chatGuid);
        // The helper (BlueBubblesHelper.m getIMChatFromGuid) answers the transaction with an
        // error; messageRouter.ts react turns it into a "Reaction Send Error".
        if (!chat) return bbError(500, "Reaction Send Error", "iMessage Error", "Chat does not exist in IMChatRegistry!");
        const tapback = bbTapback({ target, type: body.reaction, address: chat.participants[0]!, isFromMe: true, partIndex: Number(body.partIndex ?? 0), chatGuid: chat.guid });
        messages.push(tapback);
        sent.push(tapback);
        // messageInterface.ts sendReaction registers no tempGuid: one `new-message`, without it.
        await emit("new-message", bbNotification(tapback));
        return Response.json({ status: 200, message: "Reaction sent!", data: tapback });
      }

      const chatPath = /^\/api\/v1\/chat\/([^/]+)$/.exec(url.pathname);
      if (chatPath && (req.method === "GET" || req.method === "PUT")) {
        const chat = chats.get(decodeURIComponent(chatPath[1]!));
        if (req.method === "GET") {
          // chatRouter.ts find: participants when `with` names them.
          if (!chat) return bbError(404, "The requested resource was not found", "Not Found", "Chat does not exist!");
          const withParticipants = (url.searchParams.get("with") ?? "").split(",").map((w) => w.trim().toLowerCase()).includes("participants");
          return Response.json({ status: 200, message: "Success", data: chatJson(chat, withParticipants) });
        }
        // httpRoutes.ts: PrivateApiMiddleware, then chatValidator.ts validateUpdate, then chatRouter.ts update.
        const off = privateApiMiddleware();
        if (off) return off;
        const invalid = validate(body ?? {}, { displayName: "string|min:1" });
        if (invalid) return invalid;
        if (!chat) return bbError(404, "The requested resource was not found", "Not Found", "Chat does not exist!");
        const displayName = body?.displayName;
        if (!displayName) return Response.json({ status: 200, message: "Chat not updated! No update information provided!", data: chatJson(chat, true) });
        if (chat.participants.length <= 1) return bbError(500, "Cannot rename a non-group chat!", "iMessage Error", "Chat is not a group");
        // chatInterface.ts setDisplayName: the same name returns the chat as it is.
        if ((chat.displayName ?? "") !== displayName) {
          chat.displayName = displayName;
          await groupChange(chat, null, 2, 0, { groupTitle: displayName });
        }
        return Response.json({ status: 200, message: "Successfully updated the following fields: displayName", data: chatJson(chat, true) });
      }

      const participantAction = /^\/api\/v1\/chat\/([^/]+)\/participant\/(add|remove)$/.exec(url.pathname);
      if (req.method === "POST" && participantAction) {
        const off = privateApiMiddleware();
        if (off) return off;
        const invalid = validate(body ?? {}, { address: "required|string" });
        if (invalid) return invalid;
        const chat = chats.get(decodeURIComponent(participantAction[1]!));
        if (!chat) return bbError(404, "The requested resource was not found", "Not Found", "Chat does not exist!");
        // chatInterface.ts toggleParticipant: groups only; the item records who was added or removed.
        if (chat.participants.length === 1) return bbError(500, "The server has encountered an error", "Server Error", "Chat is not a group chat!");
        const address = String(body.address);
        const add = participantAction[2] === "add";
        if (add && !chat.participants.includes(address)) chat.participants.push(address);
        if (!add) chat.participants = chat.participants.filter((a) => a !== address);
        await groupChange(chat, null, 1, add ? 0 : 1, { otherHandle: 7 });
        return Response.json({ status: 200, message: "Success", data: chatJson(chat, true) });
      }

      const chatAction = /^\/api\/v1\/chat\/([^/]+)\/(typing|read)$/.exec(url.pathname);
      if (chatAction && (req.method === "POST" || (req.method === "DELETE" && chatAction[2] === "typing"))) {
        // httpRoutes.ts: PrivateApiMiddleware; no body, no validator.
        const off = privateApiMiddleware();
        if (off) return off;
        const guid = decodeURIComponent(chatAction[1]!);
        if (chatAction[2] === "read") {
          // chatInterface.ts markRead: fire and forget, then chat-read-status-changed.
          reads.push(guid);
          await emit("chat-read-status-changed", { chatGuid: guid, read: true });
          return Response.json({ status: 200, message: "Successfully marked chat as read!" });
        }
        // chatRouter.ts stopTyping calls ChatInterface.startTyping as startTyping does (v1.9.9).
        typing.add(guid);
        typingStarts.push(guid);
        return Response.json({ status: 200, message: req.method === "POST" ? "Successfully started typing!" : "Successfully stopped typing!" });
      }

      const messageAction = /^\/api\/v1\/message\/([^/]+)\/(edit|unsend)$/.exec(url.pathname);
      if (req.method === "POST" && messageAction) {
        const edit = messageAction[2] === "edit";
        // httpRoutes.ts: no Private API middleware; messageValidator.ts validateEdit / validateUnsend.
        const invalid = validate(
          body,
          edit ? { editedMessage: "required|string", backwardsCompatibilityMessage: "required|string", partIndex: "numeric|min:0" } : { partIndex: "numeric|min:0" },
        );
        if (invalid) return invalid;
        // messageRouter.ts editMessage / unsendMessage: the message and its chat first.
        const m = messages.find((x) => x.guid === decodeURIComponent(messageAction[1]!));
        if (!m) return badRequest("Selected message does not exist!");
        if (!m.chats?.length) return badRequest("Associated chat not found!");
        // messageInterface.ts editMessage / unsendMessage: checkPrivateApiStatus, answered with the router's summary.
        const off = privateApiError();
        if (off) return bbError(500, edit ? "Message Edit Error" : "Unsend Message Error", "iMessage Error", off);
        // The helper acks at once (BlueBubblesHelper.m edit-message / unsend-message); Apple
        // changes only our own messages, within its limits.
        if (m.isFromMe && !appleIgnores) {
          change(m, edit ? String(body.editedMessage) : null);
          await announceChange(m);
        }
        // resultAwaiter returns the message as it is when its wait ends, changed or not.
        return Response.json({ status: 200, message: edit ? "Message edited!" : "Message unsent!", data: m });
      }

      return bbError(404, "The requested resource was not found", "Database Error", `Route not found: ${req.method} ${url.pathname}`);
    },
  });

  const isPath = (...paths: string[]) => (r: RecordedRequest) => r.method === "POST" && paths.includes(r.path);
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    password,
    requests,
    get sends() {
      return requests.filter(isPath("/api/v1/message/text", "/api/v1/chat/new", "/api/v1/message/attachment"));
    },
    get queries() {
      return requests.filter(isPath("/api/v1/message/query"));
    },
    messages,
    chats,
    sent,
    webhooks,
    uploads,
    addAttachmentFile(bytes, mimeType, name = "IMG_0001.jpeg") {
      const attachment = bbAttachment(name, mimeType, bytes.length);
      files.set(attachment.guid, { bytes, mimeType });
      return attachment;
    },
    addChat,
    addGroup,
    async contactRenamesGroup(chat, address, name) {
      chat.displayName = name;
      return groupChange(chat, address, 2, 0, { groupTitle: name });
    },
    async contactLeavesGroup(chat, address) {
      chat.participants = chat.participants.filter((a) => a !== address);
      return groupChange(chat, address, 3, 0);
    },
    emit,
    privateApi,
    imessage,
    typing,
    typingStarts,
    reads,
    get appleIgnores() {
      return appleIgnores;
    },
    set appleIgnores(on: boolean) {
      appleIgnores = on;
    },
    async contactReacts(target, type, o = {}) {
      const address = target.handle?.address ?? target.chats?.[0]?.chatIdentifier ?? "";
      const chatGuid = target.chats?.[0]?.guid;
      const tapback = bbTapback({ target, type, address, ...(chatGuid ? { chatGuid } : {}), ...o });
      messages.push(tapback);
      await emit("new-message", bbNotification(tapback));
      return tapback;
    },
    async contactTypes(address, display) {
      const guid = `iMessage;-;${address}`;
      // PrivateApiTypingEventHandler.ts handle: emitted when new, changed, or the same value after 5 s.
      const seen = typingSeen.get(guid);
      const now = Date.now();
      if (seen && seen.display === display && now - seen.at <= 5000) return;
      typingSeen.set(guid, { display, at: now });
      await emit("typing-indicator", { display, guid });
    },
    async contactReads(message, o = {}) {
      const m = onMac(message);
      m.dateRead = o.at ?? Date.now();
      // MessagePoller.ts poll: a read counts only for our messages outside group chats.
      if (m.isFromMe && !(m.chats ?? []).some((c) => c.style === 43)) await announceChange(m, o.late);
      return m;
    },
    async contactEdits(message, text, o = {}) {
      const m = onMac(message);
      change(m, text);
      await announceChange(m, o.late);
      return m;
    },
    async contactUnsends(message, o = {}) {
      const m = onMac(message);
      change(m, null);
      await announceChange(m, o.late);
      return m;
    },
    replyToSend(r) {
      sendReply = r;
    },
    replyToQuery(r) {
      queryReply = r;
    },
    async waitFor(what, pred, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (!pred(requests)) {
        if (Date.now() > deadline) throw new Error(`fake BlueBubbles: ${what} not seen within ${ms} ms (${requests.length} requests)`);
        await Bun.sleep(10);
      }
    },
    async stop() {
      await server.stop(true);
    },
  };
}

export interface WebhookReply {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Posts an event to Textwire the way a BlueBubbles server calls a configured webhook URL
 * (`/webhooks/bluebubbles?secret=…`): JSON `{ type, data }`, no API key. `secret` null: no
 * query string at all.
 */
export async function postBlueBubblesWebhook(
  serverUrl: string,
  secret: string | null,
  event: { type: string; data: unknown },
): Promise<WebhookReply> {
  const query = secret === null ? "" : `?secret=${encodeURIComponent(secret)}`;
  const res = await fetch(`${serverUrl}/webhooks/bluebubbles${query}`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(event),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * The server's environment for this fake: every network variable set or removed explicitly,
 * so the inherited environment decides none (as twilioEnv in fake-twilio.ts).
 */
export function blueBubblesEnv(fake: FakeBlueBubbles, webhookSecret: string, overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    NETWORK: "bluebubbles",
    BLUEBUBBLES_URL: fake.url,
    BLUEBUBBLES_PASSWORD: fake.password,
    WEBHOOK_SECRET: webhookSecret,
    TWILIO_ACCOUNT_SID: undefined,
    TWILIO_AUTH_TOKEN: undefined,
    TWILIO_FROM: undefined,
    TWILIO_API_URL: undefined,
    PUBLIC_URL: undefined,
    ...overrides,
  };
}
