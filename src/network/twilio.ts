import { createHmac, timingSafeEqual } from "node:crypto";
import { AppError } from "../errors";
import type { NetworkDriver, StatusEvent } from "./driver";

export interface TwilioConfig {
  accountSid: string;
  authToken: string;
  /** A sender number (E.164) or a Messaging Service SID (MG…). */
  from: string;
  apiUrl: string;
  /** Where Twilio reaches Textwire, e.g. https://textwire.example.com */
  publicUrl: string;
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
  undelivered: "failed",
  failed: "failed",
  canceled: "failed",
};

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed by the auth token, of the full URL
 * followed by each POST parameter's name and value, sorted by name.
 */
export function twilioSignature(authToken: string, url: string, params: URLSearchParams): string {
  const names = [...new Set(params.keys())].sort();
  let data = url;
  for (const name of names) for (const value of params.getAll(name)) data += name + value;
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** SMS over Twilio's Messages resource, with status callbacks and signed webhooks. */
export function createTwilioNetwork(config: TwilioConfig): NetworkDriver {
  const base = config.apiUrl.replace(/\/+$/, "");
  const publicUrl = config.publicUrl.replace(/\/+$/, "");
  const auth = `Basic ${Buffer.from(`${config.accountSid}:${config.authToken}`).toString("base64")}`;

  return {
    name: "twilio",

    async send({ id, phone, text }) {
      // Our id rides in the callback URL, so a report that beats Twilio's answer still finds its message.
      const callback = `${publicUrl}/webhooks/twilio/status?id=${encodeURIComponent(id)}`;
      const form = new URLSearchParams({ To: phone, Body: text, StatusCallback: callback });
      form.set(config.from.startsWith("MG") ? "MessagingServiceSid" : "From", config.from);
      let res: Response;
      try {
        res = await fetch(`${base}/2010-04-01/Accounts/${config.accountSid}/Messages.json`, {
          method: "POST",
          headers: { Authorization: auth, "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
          body: form,
          signal: AbortSignal.timeout(30_000),
        });
      } catch (err) {
        throw new AppError("BAD_GATEWAY", `twilio: unreachable (${(err as Error).message})`);
      }
      const body = (await res.json().catch(() => ({}))) as { sid?: string; status?: string; code?: number; message?: string };
      if (res.ok && body.sid) return { networkId: body.sid, status: "sent" };
      const reason = `twilio: ${body.message ?? res.statusText}${body.code ? ` (error ${body.code})` : ""}`;
      if (res.status === 429) throw new AppError("TOO_MANY_REQUESTS", reason, { "Retry-After": res.headers.get("retry-after") ?? "1" });
      if (res.status >= 400 && res.status < 500 && res.status !== 401 && res.status !== 403) throw new AppError("BAD_REQUEST", reason);
      throw new AppError("BAD_GATEWAY", reason);
    },

    async webhook({ url, subpath, headers, body }) {
      const params = new URLSearchParams(body);
      const expected = twilioSignature(config.authToken, `${publicUrl}${url.pathname}${url.search}`, params);
      if (!sameSecret(headers.get("x-twilio-signature") ?? "", expected)) {
        throw new AppError("UNAUTHORIZED", "x-twilio-signature: missing or wrong");
      }
      const sid = params.get("MessageSid") ?? params.get("SmsSid") ?? "";
      if (subpath === "status") {
        const networkStatus = params.get("MessageStatus") ?? params.get("SmsStatus") ?? "";
        const status = STATUS[networkStatus];
        const errorCode = params.get("ErrorCode");
        const messageId = url.searchParams.get("id");
        return {
          inbound: [],
          statuses:
            sid && status
              ? [{ networkId: sid, ...(messageId ? { messageId } : {}), networkStatus, status, ...(errorCode ? { error: `twilio error ${errorCode}` } : {}) }]
              : [],
          response: new Response(null, { status: 204 }),
        };
      }
      if (subpath !== "") throw new AppError("NOT_FOUND", `no route POST /webhooks/twilio/${subpath}`);
      const media = Number(params.get("NumMedia") ?? 0);
      const text = params.get("Body") || (media > 0 ? `[${media} media attachment${media === 1 ? "" : "s"}]` : "");
      const from = params.get("From") ?? "";
      return {
        inbound: sid && from && text ? [{ phone: from, message: text, networkId: sid }] : [],
        statuses: [],
        response: new Response(EMPTY_TWIML, { headers: { "Content-Type": "text/xml" } }),
      };
    },
  };
}
