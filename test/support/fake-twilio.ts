/**
 * A stand-in for Twilio's REST API on 127.0.0.1, speaking its documented formats:
 *
 * - `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`, HTTP Basic auth
 *   (AccountSid:AuthToken), form-encoded `To`, `Body`, `From` or `MessagingServiceSid`,
 *   `StatusCallback`. Success: 201 with a Message resource (`sid: "SM…"`, `status: "queued"`).
 *   Errors: `{ code, message, more_info, status }` with the HTTP status.
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
export function twilioSid(prefix: "AC" | "SM" | "MG" | "MM"): string {
  return prefix + randomBytes(16).toString("hex");
}

function rfc2822(d: Date): string {
  return d.toUTCString().replace("GMT", "+0000");
}

function messageResource(accountSid: string, form: Record<string, string>, sid: string, status: string) {
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
    num_media: "0",
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
  /** Waits (bounded) until `n` Messages.json requests were received. */
  waitForSends(n: number, ms?: number): Promise<RecordedRequest[]>;
  stop(): Promise<void>;
}

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
  let next: TwilioReply | TwilioResponder = { kind: "created" };

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
      if (!body.Body) return twilioError(400, 21602, "Message body is required.");

      const reply = typeof next === "function" ? await next(recorded) : next;
      switch (reply.kind) {
        case "created": {
          const sid = reply.sid ?? twilioSid("SM");
          sids.push(sid);
          return Response.json(messageResource(accountSid, body, sid, reply.status ?? "queued"), { status: 201 });
        }
        case "error":
          return twilioError(reply.httpStatus, reply.code, reply.message, reply.headers);
        case "raw":
          return new Response(reply.body, { status: reply.httpStatus, headers: { "Content-Type": reply.contentType } });
      }
    },
  });

  const isSend = (r: RecordedRequest) => r.method === "POST" && r.path.endsWith("/Messages.json");
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    accountSid,
    authToken,
    requests,
    get sends() {
      return requests.filter(isSend);
    },
    sids,
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
export function twilioInboundParams(p: { accountSid: string; from: string; to: string; body: string; messageSid?: string; numMedia?: number }): Record<string, string> {
  const sid = p.messageSid ?? twilioSid("SM");
  return {
    ToCountry: "US",
    ToState: "CA",
    SmsMessageSid: sid,
    NumMedia: String(p.numMedia ?? 0),
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
