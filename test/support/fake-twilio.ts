/**
 * A stand-in for Twilio's REST API on 127.0.0.1, speaking its documented formats:
 *
 * - `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, HTTP Basic auth
 *   (AccountSid:AuthToken), form-encoded `To`, `Body`, `From` or `MessagingServiceSid`,
 *   `StatusCallback`. Success: 201 with a Message resource (`sid: "SM…"`, `status: "queued"`).
 *   Errors: `{ code, message, more_info, status }` with the HTTP status. A number that
 *   replied an opt-out keyword (`texted`) is refused with 400, code 21610 "Attempt to send
 *   to unsubscribed recipient", until it replies an opt-in keyword, as Twilio's opt-out
 *   handling does (its documented keywords, matched on the whole body, any case).
 *
 * - Outbound media: `MediaUrl`, repeated once per file (as the SDK sends it, arrayFormat
 *   "repeat"); `Body` or at least one `MediaUrl` is required (error 21619). After answering,
 *   Twilio fetches each MediaUrl itself, as the real service does before it sends an MMS:
 *   `mediaFetches` records what it got. A URL under `publicUrl` is fetched from `textwireUrl`
 *   (the reverse proxy in front of Textwire that PUBLIC_URL names).
 * - `GET /2010-04-01/Accounts/{AccountSid}.json` with Basic auth: the Account resource
 *   (`sid`, `friendly_name`, `status: "active"`), 401 code 20003 otherwise.
 * - Inbound media: `GET /2010-04-01/Accounts/{AccountSid}/Messages/{MessageSid}/Media/{MediaSid}`
 *   with Basic auth (an account that enforces HTTP auth on media URLs; 401 otherwise)
 *   answers a 307 redirect to the file on Twilio's CDN, here `/cdn/{MediaSid}`, which serves
 *   it with its content type and no auth.
 *
 * It records every request (method, path, query, headers, parsed body) and answers as the
 * test tells it. It also signs webhooks the way Twilio does (X-Twilio-Signature), written
 * here from Twilio's documentation, independently of Textwire's code.
 */
import { createHmac, randomBytes } from "node:crypto";

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** The form fields (or JSON) of the body; `{}` when empty. */
  body: Record<string, string>;
  /** The body exactly as received. */
  rawBody: string;
}

/** What the fake answers to one Messages.json request. */
export type TwilioReply =
  /** 201 with a Message resource; `sid` defaults to a fresh SM id. */
  | { kind: "created"; sid?: string; status?: string }
  /** Twilio's error body with this HTTP status. */
  | { kind: "error"; httpStatus: number; code: number; message: string; headers?: Record<string, string> }
  /** A raw response (e.g. a proxy's HTML 503). */
  | { kind: "raw"; httpStatus: number; body: string; contentType: string };

export type TwilioResponder = (req: RecordedRequest) => TwilioReply | Promise<TwilioReply>;

/** A Twilio-style SID: two letters and 32 lower-case hex digits. */
export function twilioSid(prefix: "AC" | "SM" | "MG" | "MM" | "ME"): string {
  return prefix + randomBytes(16).toString("hex");
}

function rfc2822(d: Date): string {
  return d.toUTCString().replace("GMT", "+0000");
}

function messageResource(accountSid: string, form: Record<string, string>, sid: string, status: string, numMedia: number) {
  const now = rfc2822(new Date());
  return {
    account_sid: accountSid,
    api_version: "2010-04-01",
    body: form.Body ?? "",
    date_created: now,
    date_sent: null,
    date_updated: now,
    direction: "outbound-api",
    error_code: null,
    error_message: null,
    from: form.From ?? null,
    messaging_service_sid: form.MessagingServiceSid ?? null,
    num_media: String(numMedia),
    num_segments: "1",
    price: null,
    price_unit: "USD",
    sid,
    status,
    subresource_uris: { media: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}/Media.json` },
    to: form.To ?? null,
    uri: `/2010-04-01/Accounts/${accountSid}/Messages/${sid}.json`,
  };
}

function twilioError(httpStatus: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return Response.json(
    { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status: httpStatus },
    { status: httpStatus, headers },
  );
}

export interface FakeTwilio {
  /** For TWILIO_API_URL, e.g. http://127.0.0.1:43121 */
  url: string;
  port: number;
  accountSid: string;
  authToken: string;
  /** Every request received, in order (Messages.json or not). */
  requests: RecordedRequest[];
  /** Only the Messages.json requests, in order. */
  readonly sends: RecordedRequest[];
  /** The SIDs the fake answered with, in order. */
  sids: string[];
  /** How the next Messages.json requests are answered (until changed). */
  reply(r: TwilioReply | TwilioResponder): void;
  /** Where Textwire really listens, for MediaUrls under TEST_PUBLIC_URL (set by the test once the server is up). */
  textwireUrl: string | undefined;
  /** Twilio's fetches of outbound MediaUrls, in order. */
  mediaFetches: MediaFetch[];
  /** Waits (bounded) until `n` media fetches were made. */
  waitForMediaFetches(n: number, ms?: number): Promise<MediaFetch[]>;
  /** A file attached to an inbound message: its MediaUrl (auth required), served by this fake. */
  addInboundMedia(messageSid: string, bytes: Uint8Array, contentType: string): string;
  /** Numbers that replied an opt-out keyword (Twilio refuses sends to them with 21610). */
  optedOut: Set<string>;
  /**
   * A contact texts our number: Twilio's keyword handling updates its opt-out list, and the
   * parameters of the inbound webhook are returned (with `OptOutType` when Advanced Opt-Out
   * is on, as on a Messaging Service) for the test to post.
   */
  texted(p: { from: string; body: string; advancedOptOut?: boolean; messageSid?: string }): Record<string, string>;
  /** Waits (bounded) until `n` Messages.json requests were received. */
  waitForSends(n: number, ms?: number): Promise<RecordedRequest[]>;
  stop(): Promise<void>;
}

/** What Twilio got when it fetched one outbound MediaUrl. */
export interface MediaFetch {
  url: string;
  status: number;
  contentType: string | null;
  bytes: Uint8Array;
}

/** Twilio's default keywords ("Twilio support for opt-out keywords (SMS STOP filtering)"). */
const TWILIO_OPT_OUT = new Set(["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPTOUT", "REVOKE"]);
const TWILIO_OPT_IN = new Set(["START", "YES", "UNSTOP"]);
const TWILIO_HELP = new Set(["HELP", "INFO"]);

/** The number Textwire sends from, and the public URL Twilio signs webhooks for, in tests. */
export const TEST_FROM = "+14155550100";
export const TEST_PUBLIC_URL = "https://textwire.example.com";

/**
 * Textwire's environment for NETWORK=twilio against this fake. Every network variable is set
 * or removed (`undefined`) explicitly: the inherited environment decides none.
 */
export function twilioEnv(fake: FakeTwilio, overrides: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  return {
    NETWORK: "twilio",
    TWILIO_API_URL: fake.url,
    TWILIO_ACCOUNT_SID: fake.accountSid,
    TWILIO_AUTH_TOKEN: fake.authToken,
    TWILIO_FROM: TEST_FROM,
    PUBLIC_URL: TEST_PUBLIC_URL,
    BLUEBUBBLES_URL: undefined,
    BLUEBUBBLES_PASSWORD: undefined,
    WEBHOOK_SECRET: undefined,
    ...overrides,
  };
}

/** Starts the fake Twilio API. Requests with other credentials get Twilio's 401 (code 20003). */
export function startFakeTwilio(opts: { accountSid?: string; authToken?: string } = {}): FakeTwilio {
  const accountSid = opts.accountSid ?? twilioSid("AC");
  const authToken = opts.authToken ?? randomBytes(16).toString("hex");
  const expectedAuth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString("base64")}`;
  const requests: RecordedRequest[] = [];
  const sids: string[] = [];
  const optedOut = new Set<string>();
  let next: TwilioReply | TwilioResponder = { kind: "created" };
  const mediaFetches: MediaFetch[] = [];
  const inboundMedia = new Map<string, { bytes: Uint8Array; contentType: string }>();
  const fake = { textwireUrl: undefined as string | undefined };

  /** Twilio fetches each MediaUrl of a message it took. */
  async function fetchMediaUrls(urls: string[]): Promise<void> {
    for (const url of urls) {
      const target = fake.textwireUrl && url.startsWith(TEST_PUBLIC_URL) ? fake.textwireUrl + url.slice(TEST_PUBLIC_URL.length) : url;
      try {
        const res = await fetch(target, { headers: { "User-Agent": "TwilioProxy/1.1" } });
        mediaFetches.push({ url, status: res.status, contentType: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) });
      } catch {
        mediaFetches.push({ url, status: 0, contentType: null, bytes: new Uint8Array(0) });
      }
    }
  }

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const rawBody = await req.text();
      const type = req.headers.get("content-type") ?? "";
      let body: Record<string, string> = {};
      if (type.startsWith("application/x-www-form-urlencoded")) body = Object.fromEntries(new URLSearchParams(rawBody));
      else if (type.startsWith("application/json") && rawBody) {
        try {
          body = JSON.parse(rawBody) as Record<string, string>;
        } catch {
          body = {};
        }
      }
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v));
      const recorded: RecordedRequest = {
        method: req.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        body,
        rawBody,
      };
      requests.push(recorded);

      const cdn = /^\/cdn\/(ME[0-9a-f]{32})$/.exec(url.pathname);
      if (cdn && req.method === "GET") {
        const file = inboundMedia.get(cdn[1]!);
        if (!file) return new Response("<Error><Code>NoSuchKey</Code></Error>", { status: 404, headers: { "Content-Type": "application/xml" } });
        return new Response(file.bytes as Uint8Array<ArrayBuffer>, { headers: { "Content-Type": file.contentType } });
      }
      const media = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\/[^/]+\/Media\/(ME[0-9a-f]{32})$/.exec(url.pathname);
      if (media && req.method === "GET") {
        if (req.headers.get("authorization") !== expectedAuth || media[1] !== accountSid) return twilioError(401, 20003, "Authenticate");
        if (!inboundMedia.has(media[2]!)) return twilioError(404, 20404, `The requested resource ${url.pathname} was not found`);
        return new Response(null, { status: 307, headers: { Location: `/cdn/${media[2]}` } });
      }

      // The Account resource (GET /2010-04-01/Accounts/{AccountSid}.json), what a line's test fetches.
      const account = /^\/2010-04-01\/Accounts\/([^/]+)\.json$/.exec(url.pathname);
      if (account && req.method === "GET") {
        if (req.headers.get("authorization") !== expectedAuth || account[1] !== accountSid) return twilioError(401, 20003, "Authenticate");
        return Response.json({ sid: accountSid, friendly_name: "My first Twilio account", status: "active", type: "Full", uri: `/2010-04-01/Accounts/${accountSid}.json` });
      }
      const match = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(url.pathname);
      if (!match) return twilioError(404, 20404, `The requested resource ${url.pathname} was not found`);
      if (req.method !== "POST") return twilioError(405, 20004, "Method not allowed");
      if (req.headers.get("authorization") !== expectedAuth || match[1] !== accountSid) {
        return twilioError(401, 20003, "Authenticate");
      }
      if (!body.To) return twilioError(400, 21604, "A 'To' phone number is required.");
      if (!body.From && !body.MessagingServiceSid) {
        return twilioError(400, 21603, "A 'From' or 'MessagingServiceSid' parameter is required to send a message.");
      }
      const mediaUrls = type.startsWith("application/x-www-form-urlencoded") ? new URLSearchParams(rawBody).getAll("MediaUrl") : [];
      if (!body.Body && mediaUrls.length === 0) return twilioError(400, 21619, "A text message body or media urls must be specified.");
      if (mediaUrls.length > 10) return twilioError(400, 21623, "Number of media files exceeds allowed limit.");
      if (optedOut.has(body.To)) return twilioError(400, 21610, "Attempt to send to unsubscribed recipient");

      const reply = typeof next === "function" ? await next(recorded) : next;
      switch (reply.kind) {
        case "created": {
          const sid = reply.sid ?? twilioSid("SM");
          sids.push(sid);
          if (mediaUrls.length > 0) setTimeout(() => void fetchMediaUrls(mediaUrls), 0);
          return Response.json(messageResource(accountSid, body, sid, reply.status ?? "queued", mediaUrls.length), { status: 201 });
        }
        case "error":
          return twilioError(reply.httpStatus, reply.code, reply.message, reply.headers);
        case "raw":
          return new Response(reply.body, { status: reply.httpStatus, headers: { "Content-Type": reply.contentType } });
      }
    },
  });

  const isSend = (r: RecordedRequest) => r.method === "POST" && r.path.endsWith("/Messages.json");
  const base = `http://127.0.0.1:${server.port}`;
  return {
    get textwireUrl() {
      return fake.textwireUrl;
    },
    set textwireUrl(url) {
      fake.textwireUrl = url;
    },
    mediaFetches,
    async waitForMediaFetches(n, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (mediaFetches.length < n) {
        if (Date.now() > deadline) throw new Error(`fake Twilio: expected ${n} media fetches within ${ms} ms, got ${mediaFetches.length}`);
        await Bun.sleep(10);
      }
      return mediaFetches;
    },
    addInboundMedia(messageSid, bytes, contentType) {
      const mediaSid = twilioSid("ME");
      inboundMedia.set(mediaSid, { bytes, contentType });
      return `${base}/2010-04-01/Accounts/${accountSid}/Messages/${messageSid}/Media/${mediaSid}`;
    },
    url: base,
    port: server.port!,
    accountSid,
    authToken,
    requests,
    get sends() {
      return requests.filter(isSend);
    },
    sids,
    optedOut,
    texted({ from, body, advancedOptOut, messageSid }) {
      const word = body.trim().toUpperCase();
      const type = TWILIO_OPT_OUT.has(word) ? "STOP" : TWILIO_OPT_IN.has(word) ? "START" : TWILIO_HELP.has(word) ? "HELP" : undefined;
      if (type === "STOP") optedOut.add(from);
      if (type === "START") optedOut.delete(from);
      const params = twilioInboundParams({ accountSid, from, to: TEST_FROM, body, ...(messageSid ? { messageSid } : {}) });
      return advancedOptOut && type ? { ...params, OptOutType: type } : params;
    },
    reply(r) {
      next = r;
    },
    async waitForSends(n, ms = 10_000) {
      const deadline = Date.now() + ms;
      while (requests.filter(isSend).length < n) {
        if (Date.now() > deadline) throw new Error(`fake Twilio: expected ${n} Messages.json requests within ${ms} ms, got ${requests.filter(isSend).length}`);
        await Bun.sleep(10);
      }
      return requests.filter(isSend);
    },
    async stop() {
      await server.stop(true);
    },
  };
}

/**
 * Twilio's webhook signature, from Twilio's documentation ("Validating signatures from
 * Twilio"): take the full URL Twilio requested, append each POST parameter's name and value
 * with the names sorted alphabetically, HMAC-SHA1 it with the auth token, base64 the digest.
 * A repeated parameter (an array here) contributes each distinct value once, values sorted,
 * as the official SDK's getExpectedTwilioSignature does (twilio/lib/webhooks/webhooks.js).
 */
export function signTwilioRequest(authToken: string, url: string, params: Record<string, string | string[]>): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const value = params[name]!;
    for (const v of Array.isArray(value) ? [...new Set(value)].sort() : [value]) data += name + v;
  }
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf8")).digest("base64");
}

/** The parameters Twilio posts to a number's messaging webhook for an incoming SMS. */
export function twilioInboundParams(p: {
  accountSid: string;
  from: string;
  to: string;
  body: string;
  messageSid?: string;
  numMedia?: number;
  /** MediaUrlN and MediaContentTypeN, NumMedia their count. */
  media?: { url: string; contentType: string }[];
}): Record<string, string> {
  const sid = p.messageSid ?? twilioSid("SM");
  const media = Object.fromEntries((p.media ?? []).flatMap((m, i) => [[`MediaUrl${i}`, m.url], [`MediaContentType${i}`, m.contentType]]));
  return {
    ...media,
    ToCountry: "US",
    ToState: "CA",
    SmsMessageSid: sid,
    NumMedia: String(p.numMedia ?? p.media?.length ?? 0),
    ToCity: "SAN FRANCISCO",
    FromZip: "94105",
    SmsSid: sid,
    FromState: "CA",
    SmsStatus: "received",
    FromCity: "SAN FRANCISCO",
    Body: p.body,
    FromCountry: "US",
    To: p.to,
    ToZip: "94105",
    NumSegments: "1",
    MessageSid: sid,
    AccountSid: p.accountSid,
    From: p.from,
    ApiVersion: "2010-04-01",
  };
}

/** The parameters Twilio posts to a message's StatusCallback URL. */
export function twilioStatusParams(p: {
  accountSid: string;
  messageSid: string;
  status: string;
  from: string;
  to: string;
  errorCode?: string;
}): Record<string, string> {
  return {
    SmsSid: p.messageSid,
    SmsStatus: p.status,
    MessageStatus: p.status,
    To: p.to,
    MessageSid: p.messageSid,
    AccountSid: p.accountSid,
    From: p.from,
    ApiVersion: "2010-04-01",
    ...(p.errorCode ? { ErrorCode: p.errorCode } : {}),
  };
}

export interface WebhookReply {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * Posts a webhook to Textwire the way Twilio does: form-encoded, no API key, and
 * X-Twilio-Signature unless `signature` is null. `signature` may be given to forge one.
 */
export async function postTwilioWebhook(
  serverUrl: string,
  path: string,
  params: Record<string, string | string[]>,
  signature: string | null,
): Promise<WebhookReply> {
  const headers: Record<string, string> = {
    "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
    "User-Agent": "TwilioProxy/1.1",
    "I-Twilio-Idempotency-Token": randomBytes(16).toString("hex"),
  };
  if (signature !== null) headers["X-Twilio-Signature"] = signature;
  // A repeated parameter goes as the same name once per value, as Twilio posts it.
  const form = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) for (const v of Array.isArray(value) ? value : [value]) form.append(name, v);
  const res = await fetch(serverUrl + path, { method: "POST", headers, body: form.toString() });
  return { status: res.status, headers: res.headers, text: await res.text() };
}
