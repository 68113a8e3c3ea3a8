/**
 * A stand-in for a BlueBubbles server's REST API on 127.0.0.1, speaking its formats:
 *
 * - `POST /api/v1/message/text?password=…` JSON `{ chatGuid, tempGuid, message, method }`
 *   → `{ status: 200, message: "Message sent!", data: <message> }`.
 * - `POST /api/v1/message/query?password=…` JSON `{ after, before, limit, offset, sort, with }`
 *   → `{ status: 200, message: "Success", data: [messages], metadata: { … } }`, over the
 *   messages the fake's "Mac" holds (`after`/`before` inclusive, in ms, as BlueBubbles does).
 * - A wrong password: 401 `{ status: 401, message: "Unauthorized", error: { … } }`.
 *
 * It records every request (method, path, query, headers, parsed body) and answers as the
 * test tells it. A message has `guid`, `text`, `isFromMe`, `handle: { address }`,
 * `dateCreated` (ms), `dateDelivered`, `error`, `tempGuid`.
 */
import { randomUUID } from "node:crypto";

export interface BbHandle {
  originalROWID: number;
  address: string;
  service: string;
  country: string | null;
  uncanonicalizedId: string | null;
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
  chats?: { guid: string; chatIdentifier: string; style: number }[];
  tempGuid?: string | null;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The parsed JSON body; undefined when none or not JSON. */
  body: any;
  rawBody: string;
}

let rowid = 1000;

/** A message as a BlueBubbles server serializes it. */
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
}): BbMessage {
  rowid++;
  const message: BbMessage = {
    originalROWID: rowid,
    guid: p.guid ?? randomUUID().toUpperCase(),
    text: p.text,
    handle: { originalROWID: 7, address: p.address, service: "iMessage", country: "us", uncanonicalizedId: null },
    handleId: 7,
    attachments: [],
    subject: null,
    error: p.error ?? 0,
    dateCreated: p.dateCreated ?? Date.now(),
    dateRead: p.dateRead ?? null,
    dateDelivered: p.dateDelivered ?? null,
    isFromMe: p.isFromMe ?? false,
    isDelivered: p.dateDelivered != null,
    isArchived: false,
    itemType: 0,
    associatedMessageGuid: null,
    associatedMessageType: null,
    expressiveSendStyleId: null,
    threadOriginatorGuid: null,
    hasPayloadData: false,
    chats: [{ guid: `iMessage;-;${p.address}`, chatIdentifier: p.address, style: 45 }],
  };
  if (p.tempGuid !== undefined) message.tempGuid = p.tempGuid;
  return message;
}

/** What the fake answers to one message/text request. */
export type SendReply =
  /** 200 "Message sent!" with a new from-me message (added to the Mac's messages unless `store` is false). */
  | { kind: "sent"; guid?: string; store?: boolean }
  /** BlueBubbles' error envelope with this status. */
  | { kind: "error"; httpStatus: number; message: string; errorType?: string };

export type QueryReply = { kind: "messages" } | { kind: "error"; httpStatus: number; message: string };

export interface FakeBlueBubbles {
  /** For BLUEBUBBLES_URL, e.g. http://127.0.0.1:43121 */
  url: string;
  port: number;
  password: string;
  /** Every request received, in order. */
  requests: RecordedRequest[];
  readonly sends: RecordedRequest[];
  readonly queries: RecordedRequest[];
  /** The Mac's messages (chat.db): what message/query searches. Tests may push to it. */
  messages: BbMessage[];
  /** The messages the fake answered message/text with, in order. */
  sent: BbMessage[];
  replyToSend(r: SendReply | ((req: RecordedRequest) => SendReply | Promise<SendReply>)): void;
  replyToQuery(r: QueryReply): void;
  /** Waits (bounded) until the predicate holds over the recorded requests. */
  waitFor(what: string, pred: (requests: RecordedRequest[]) => boolean, ms?: number): Promise<void>;
  stop(): Promise<void>;
}

function bbError(httpStatus: number, message: string, type = "Server Error"): Response {
  return Response.json({ status: httpStatus, message, error: { type, message } }, { status: httpStatus });
}

export function startFakeBlueBubbles(opts: { password?: string } = {}): FakeBlueBubbles {
  const password = opts.password ?? `bb-${randomUUID()}`;
  const requests: RecordedRequest[] = [];
  const messages: BbMessage[] = [];
  const sent: BbMessage[] = [];
  let sendReply: SendReply | ((req: RecordedRequest) => SendReply | Promise<SendReply>) = { kind: "sent" };
  let queryReply: QueryReply = { kind: "messages" };

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const rawBody = await req.text();
      let body: any;
      try {
        body = rawBody ? JSON.parse(rawBody) : undefined;
      } catch {
        body = undefined;
      }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v));
      const recorded: RecordedRequest = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams), headers, body, rawBody };
      requests.push(recorded);

      const given = url.searchParams.get("password") ?? url.searchParams.get("guid") ?? url.searchParams.get("token");
      if (given !== password) {
        return Response.json(
          { status: 401, message: "Unauthorized", error: { type: "Authentication Error", message: "You are not authorized to access this resource" } },
          { status: 401 },
        );
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/text") {
        if (!body || typeof body !== "object") return bbError(400, "Invalid JSON body", "Validation Error");
        if (typeof body.chatGuid !== "string" || !body.chatGuid) return bbError(400, "No chat GUID provided", "Validation Error");
        if (typeof body.message !== "string") return bbError(400, "No message provided", "Validation Error");
        const reply = typeof sendReply === "function" ? await sendReply(recorded) : sendReply;
        if (reply.kind === "error") return bbError(reply.httpStatus, reply.message, reply.errorType);
        const address = String(body.chatGuid).split(";-;")[1] ?? "";
        const message = bbMessage({
          address,
          text: body.message,
          isFromMe: true,
          tempGuid: typeof body.tempGuid === "string" ? body.tempGuid : null,
          ...(reply.guid ? { guid: reply.guid } : {}),
        });
        sent.push(message);
        if (reply.store !== false) messages.push(message);
        return Response.json({ status: 200, message: "Message sent!", data: message });
      }

      if (req.method === "POST" && url.pathname === "/api/v1/message/query") {
        if (queryReply.kind === "error") return bbError(queryReply.httpStatus, queryReply.message);
        const q = (body ?? {}) as { after?: number; before?: number; limit?: number; offset?: number; sort?: string; with?: string[] };
        const limit = Math.min(Number(q.limit ?? 100), 1000);
        const offset = Number(q.offset ?? 0);
        // BlueBubbles: `after`/`before` are inclusive date bounds, ignored when falsy.
        let found = messages.filter((m) => (!q.after || m.dateCreated >= Number(q.after)) && (!q.before || m.dateCreated <= Number(q.before)));
        found = found.sort((a, b) => a.dateCreated - b.dateCreated || a.originalROWID - b.originalROWID);
        if ((q.sort ?? "DESC").toUpperCase() === "DESC") found.reverse();
        const page = found.slice(offset, offset + limit);
        const withChats = Array.isArray(q.with) && q.with.some((w) => w === "chat" || w === "chats");
        const data = page.map((m) => {
          const { chats, ...rest } = m;
          return withChats ? { ...rest, chats } : rest;
        });
        return Response.json({
          status: 200,
          message: "Success",
          data,
          metadata: { offset, limit, total: found.length, count: data.length },
        });
      }

      return bbError(404, `Route not found: ${req.method} ${url.pathname}`, "Not Found");
    },
  });

  const isPath = (path: string) => (r: RecordedRequest) => r.method === "POST" && r.path === path;
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    password,
    requests,
    get sends() {
      return requests.filter(isPath("/api/v1/message/text"));
    },
    get queries() {
      return requests.filter(isPath("/api/v1/message/query"));
    },
    messages,
    sent,
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
