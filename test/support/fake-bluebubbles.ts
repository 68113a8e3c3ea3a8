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
 * - Webhooks: a sent message is announced twice as `new-message`, once when it appears in
 *   chat.db (index.ts handleNewMessage, no tempGuid) and once when it matches the waiting
 *   send (index.ts emitMessageMatch, with the tempGuid); services/webhookService posts
 *   `{ type, data }` to each webhook URL.
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
  chats?: { guid: string; chatIdentifier: string; style: number; participants?: unknown[] }[];
  tempGuid?: string | null;
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
    chats: [{ guid: chatGuid, chatIdentifier: group ? chatGuid.split(";+;")[1]! : p.address, style: group ? 43 : 45 }],
  };
  if (p.tempGuid !== undefined) message.tempGuid = p.tempGuid;
  return message;
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
  /** Adds a group chat with these addresses. */
  addGroup(addresses: string[]): BbChat;
  /** Posts `{ type, data }` to every webhook URL; resolves when all answered. */
  emit(type: string, data: unknown): Promise<void>;
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

/** messagePromise.ts: the server gives up waiting for a sent message after 2 minutes. */
const SERVER_SEND_WAIT_MS = 2 * 60_000;

/** `privateApi`: the server's Private API is enabled and its helper connected (needed for threaded replies). */
export function startFakeBlueBubbles(opts: { password?: string; privateApi?: boolean } = {}): FakeBlueBubbles {
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
  function addGroup(addresses: string[]): BbChat {
    const id = `chat${Math.floor(Math.random() * 1e15)}`;
    const chat = { originalROWID: ++rowid, guid: `iMessage;+;${id}`, style: 43, chatIdentifier: id, isArchived: false, displayName: null, participants: addresses };
    chats.set(chat.guid, chat);
    return chat;
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
    await emit("new-message", message);
    await emit("new-message", { ...message, tempGuid });
    return message;
  }

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
        if (method === "private-api" && !opts.privateApi) {
          // messageRouter.ts sendText: any other error becomes IMessageError with its text.
          return bbError(500, "Message Send Error", "iMessage Error", "iMessage Private API is not enabled!");
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
        if (body.addresses.length > 1) return unhandled("Cannot create group chats on macOS Big Sur or newer!");
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
    emit,
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
