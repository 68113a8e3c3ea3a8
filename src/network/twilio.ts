import { createHmac, timingSafeEqual } from "node:crypto";
import { parse as parseQuery, stringify as stringifyQuery } from "node:querystring";
import { AppError } from "../errors";
import { TWILIO_UNSUBSCRIBED } from "../messages/opt-out";
import { OPT_OUT_TYPES, type OptOutType } from "../vocabulary/messages";
import { checkFailure, RecipientOptedOut, SendOutcomeUnknown, sendRequestFailure, webhookEvents, type InboundEvent, type InboundMedia, type NetworkDriver, type StatusEvent } from "./driver";
import { tracedFetch } from "../observability/trace";

export interface TwilioConfig {
  accountSid: string;
  authToken: string;
  /** A sender number (E.164) or a Messaging Service SID (MG…). */
  from: string;
  apiUrl: string;
  /** Where Twilio reaches Textwire, e.g. https://textwire.example.com */
  publicUrl: string;
  /** This line's webhook path under publicUrl: `/webhooks/twilio` (the environment's line) or `/webhooks/lines/<id>`. */
  webhookPath?: string;
  /** How long a send waits for Twilio's answer before its outcome is unknown. */
  sendTimeoutMs: number;
}

/** Twilio's message statuses onto ours; `undefined` means no change worth recording. */
const STATUS: Record<string, StatusEvent["status"] | undefined> = {
  accepted: "sent",
  scheduled: "sent",
  queued: "sent",
  sending: "sent",
  sent: "sent",
  delivered: "delivered",
  read: "delivered",
  // Twilio confirmed delivery of part of the message (some of its segments) but not all of
  // it: the recipient has the message, so it is not sent again; the report's error names it.
  partially_delivered: "delivered",
  undelivered: "failed",
  failed: "failed",
  canceled: "failed",
};

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed by the auth token, of the full URL
 * followed by each POST parameter's name and value, names sorted; a repeated parameter's
 * values are deduplicated and sorted (as the official SDK's getExpectedTwilioSignature
 * does, node_modules/twilio/lib/webhooks/webhooks.js).
 */
export function twilioSignature(authToken: string, url: string, params: URLSearchParams): string {
  const names = [...new Set(params.keys())].sort();
  let data = url;
  for (const name of names) {
    const values = params.getAll(name);
    for (const value of values.length > 1 ? [...new Set(values)].sort() : values) data += name + value;
  }
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

/** The parts of an absolute URL, split without normalizing (so the path keeps what was signed). */
function splitUrl(url: string) {
  const match = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)/i.exec(url);
  if (!match) return null;
  const [prefix, scheme, authority] = match as unknown as [string, string, string];
  const userInfoEnd = authority.lastIndexOf("@");
  const hostAndPort = authority.slice(userInfoEnd + 1);
  // A colon starts the port only after the closing bracket of an IPv6 literal.
  const portStart = hostAndPort.indexOf(":", hostAndPort.lastIndexOf("]") + 1);
  return {
    scheme,
    userInfo: authority.slice(0, userInfoEnd + 1),
    host: portStart === -1 ? hostAndPort : hostAndPort.slice(0, portStart),
    port: portStart === -1 ? "" : hostAndPort.slice(portStart),
    rest: url.slice(prefix.length),
  };
}

/** The URL with the scheme's default port (:443 for https, :80 otherwise) when it has none. */
function withPort(url: string): string {
  const parts = splitUrl(url);
  if (!parts || parts.port) return url;
  return parts.scheme + parts.userInfo + parts.host + (parts.scheme.toLowerCase() === "https://" ? ":443" : ":80") + parts.rest;
}

/** The URL without its port. */
function withoutPort(url: string): string {
  const parts = splitUrl(url);
  return parts ? parts.scheme + parts.userInfo + parts.host + parts.rest : url;
}

/** The query string re-encoded as Node's legacy `querystring` does (`'` as `%27`). */
function withLegacyQuery(url: string): string {
  const start = url.indexOf("?");
  if (start === -1 || start === url.length - 1) return url;
  return url.slice(0, start) + "?" + stringifyQuery(parseQuery(url.slice(start + 1)));
}

/**
 * The URLs a signature may have been computed over, in the order the official SDK's
 * validateRequest tries them: the URL as received without and with the default port
 * (Twilio signs the URL it called; a proxy may add or strip `:443`/`:80`), then the URL
 * as `new URL()` normalizes it, without and with the port, each also with the legacy
 * query encoding.
 */
export function twilioSignedUrlForms(url: string): string[] {
  const forms = [withoutPort(url), withPort(url)];
  let normalized: string;
  try {
    normalized = new URL(url).toString();
  } catch {
    return forms;
  }
  const bare = withoutPort(normalized);
  const ported = withPort(normalized);
  forms.push(bare, ported, withLegacyQuery(bare), withLegacyQuery(ported));
  return [...new Set(forms)];
}

/** True when `signature` is Twilio's for this URL (in any form validateRequest accepts) and these parameters. */
export function twilioRequestValid(authToken: string, signature: string, url: string, params: URLSearchParams): boolean {
  return twilioSignedUrlForms(url).some((form) => sameSecret(signature, twilioSignature(authToken, form, params)));
}

const isOptOutType = (word: string): word is OptOutType => (OPT_OUT_TYPES as readonly string[]).includes(word);

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** SMS over Twilio's Messages resource, with status callbacks and signed webhooks. */
export function createTwilioNetwork(config: TwilioConfig): NetworkDriver {
  const base = config.apiUrl.replace(/\/+$/, "");
  const publicUrl = config.publicUrl.replace(/\/+$/, "");
  const webhookPath = config.webhookPath ?? "/webhooks/twilio";
  const auth = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`).toString("base64")}`;
  const apiOrigin = new URL(base).origin;

  /**
   * NumMedia files at MediaUrl0…, typed MediaContentType0…: fetched with the account's
   * Basic auth (required when the account enforces HTTP auth on media; Twilio then
   * redirects to its CDN, where the header is not sent).
   */
  function inboundMedia(params: URLSearchParams): InboundMedia[] {
    const count = Math.min(Number(params.get("NumMedia") ?? 0) || 0, 10);
    const media: InboundMedia[] = [];
    for (let i = 0; i < count; i++) {
      const url = params.get(`MediaUrl${i}`);
      if (!url) continue;
      const contentType = params.get(`MediaContentType${i}`);
      // Twilio's own API (TWILIO_API_URL) is trusted as configured, like the network itself.
      const trusted = URL.canParse(url) && new URL(url).origin === apiOrigin;
      media.push({ url, headers: { Authorization: auth }, ...(contentType ? { contentType } : {}), ...(trusted ? { trusted } : {}) });
    }
    return media;
  }

  return {
    name: "twilio",
    // Twilio's Programmable Messaging has no reactions, typing, read receipts, edits or threads (docs/networks.md).
    capabilities: { reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: true, threads: false },

    // Twilio has no threaded replies: `replyTo` is kept in our record, not sent.
    async send({ id, phone, text, media = [] }) {
      // Our id rides in the callback URL, so a report that beats Twilio's answer still finds its message.
      const callback = `${publicUrl}${webhookPath}/status?id=${encodeURIComponent(id)}`;
      const form = new URLSearchParams({ To: phone, StatusCallback: callback });
      if (text) form.set("Body", text);
      // One MediaUrl per file, repeated as the SDK sends it (arrayFormat "repeat"): signed
      // Textwire URLs that Twilio fetches itself.
      for (const m of media) form.append("MediaUrl", await m.url());
      form.set(config.from.startsWith("MG") ? "MessagingServiceSid" : "From", config.from);
      let res: Response;
      try {
        res = await tracedFetch(`${base}/2010-04-01/Accounts/${config.accountSid}/Messages.json`, {
          method: "POST",
          headers: { Authorization: auth, "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
          body: form,
          signal: AbortSignal.timeout(config.sendTimeoutMs),
        });
      } catch (err) {
        // A timeout may come after Twilio took the message: unknown, never failed (docs/networks.md).
        throw sendRequestFailure("twilio", err);
      }
      let body: { sid?: string; status?: string; code?: number; message?: string };
      try {
        body = (await res.json()) as typeof body;
      } catch {
        // Twilio took it when it said 2xx; its status callback (with our id) will say the rest.
        if (res.ok) throw new SendOutcomeUnknown("twilio: the answer to the send was cut or unreadable");
        body = {};
      }
      if (res.ok && body.sid) return { networkId: body.sid, status: "sent" };
      if (res.ok) throw new SendOutcomeUnknown("twilio: the answer to the send named no message");
      const reason = `twilio: ${body.message ?? res.statusText}${body.code ? ` (error ${body.code})` : ""}`;
      // Twilio keeps its own opt-out list: a number that replied STOP is refused with 21610.
      if (body.code === TWILIO_UNSUBSCRIBED) throw new RecipientOptedOut(reason);
      if (res.status === 429) throw new AppError("TOO_MANY_REQUESTS", reason, { "Retry-After": res.headers.get("retry-after") ?? "1" });
      if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403) throw new AppError("BAD_REQUEST", reason, {}, { issues: [{ path: "body", message: reason }] });
      throw new AppError("BAD_GATEWAY", reason);
    },

    async check() {
      // The Account resource: proves the SID and token without sending anything.
      try {
        const res = await tracedFetch(`${base}/2010-04-01/Accounts/${config.accountSid}.json`, {
          headers: { Authorization: auth, Accept: "application/json" },
          signal: AbortSignal.timeout(10_000),
        });
        const body = (await res.json().catch(() => ({}))) as { status?: string; friendly_name?: string; message?: string; code?: number };
        if (!res.ok) return { ok: false, detail: `twilio: ${res.status} ${body.message ?? res.statusText}${body.code ? ` (error ${body.code})` : ""}` };
        if (body.status && body.status !== "active") return { ok: false, detail: `twilio: the account is ${body.status}` };
        return { ok: true, detail: `twilio: account ${config.accountSid} (${body.friendly_name ?? "no name"}) is active` };
      } catch (err) {
        return checkFailure("twilio", err);
      }
    },

    async webhook({ url, subpath, headers, body }) {
      const params = new URLSearchParams(body);
      if (!twilioRequestValid(config.authToken, headers.get("x-twilio-signature") ?? "", `${publicUrl}${url.pathname}${url.search}`, params)) {
        throw new AppError("UNAUTHORIZED", "x-twilio-signature: missing or wrong");
      }
      const sid = params.get("MessageSid") ?? params.get("SmsSid") ?? "";
      if (subpath === "status") {
        const networkStatus = params.get("MessageStatus") ?? params.get("SmsStatus") ?? "";
        const status = STATUS[networkStatus];
        const errorCode = params.get("ErrorCode");
        const error = errorCode
          ? `twilio error ${errorCode}`
          : networkStatus === "partially_delivered"
            ? "twilio: partially delivered (not every segment confirmed)"
            : undefined;
        const messageId = url.searchParams.get("id");
        return {
          ...webhookEvents([], sid && status ? [{ networkId: sid, ...(messageId ? { messageId } : {}), networkStatus, status, ...(error ? { error } : {}) }] : []),
          response: new Response(null, { status: 204 }),
        };
      }
      if (subpath !== "") throw new AppError("NOT_FOUND", `no route POST /webhooks/twilio/${subpath}`);
      const text = params.get("Body") ?? "";
      const media = inboundMedia(params);
      const from = params.get("From") ?? "";
      // Sent only with Advanced Opt-Out on a Messaging Service, when the whole text is a keyword.
      const optOutType = params.get("OptOutType")?.toUpperCase() ?? "";
      const event: InboundEvent = { phone: from, message: text, networkId: sid };
      if (media.length > 0) event.media = media;
      if (isOptOutType(optOutType)) event.optOutType = optOutType;
      return {
        ...webhookEvents(sid && from && (text || media.length > 0) ? [event] : [], []),
        response: new Response(EMPTY_TWIML, { headers: { "Content-Type": "text/xml" } }),
      };
    },
  };
}
