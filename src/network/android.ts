import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { AppError } from "../errors";
import type { Logger } from "../log";
import { tracedFetch } from "../observability/trace";
import { SendOutcomeUnknown, sendRequestFailure, webhookEvents, type InboundEvent, type LineCheck, type NetworkDriver, type StatusEvent } from "./driver";

/**
 * SMS through a phone running SMS Gateway for Android (github.com/capcom6/android-sms-gateway,
 * read at 0cdc5d8; files under app/src/main/java/me/capcom/smsgateway/), talking to the
 * phone's own server (local mode) or to the cloud or a private server
 * (github.com/android-sms-gateway/server at 22074dd, types from
 * github.com/android-sms-gateway/client-go at 9b59987), which share one API. Each rule below
 * names the file it follows; docs/networks.md explains them.
 */
export interface AndroidConfig {
  /** The local server (`http://<phone>:8080`, or the TLS proxy in front of it) or the server's `…/3rdparty/v1`. */
  url: string;
  username: string;
  password: string;
  /** The app's webhook signing key (Settings → Webhooks): every webhook is checked against it. */
  signingKey: string;
  /** The phone: required on the cloud or a private server, checked against the phone locally. */
  deviceId?: string;
  /** The SIM to send from (1-3); the app's default SIM without it. */
  simNumber?: number;
  /** How long a send waits for the gateway's answer before its outcome is unknown. */
  sendTimeoutMs: number;
  /** Where the gateway must post its webhooks (absolute; https, or http://127.0.0.1). */
  webhookUrl: string;
  /** Fixed per line (its id): our webhooks' ids are derived from it, so registering again replaces them. */
  webhookIdPrefix: string;
  /** How errors name this line, e.g. `android line "home"`; `android` without it. */
  label?: string;
  log?: Logger;
}

/** The android driver with what the lines registry does to a line over its life. */
export interface AndroidNetwork extends NetworkDriver {
  /** An authenticated call proving the credentials and the phone; never throws for network failures. */
  check(): Promise<LineCheck>;
  /** Registers our URL for the four events under fixed ids (again: replaces, never adds). */
  register(): Promise<void>;
  /** Removes the four registrations (a missing one is no error). */
  unregister(): Promise<void>;
}

/** A line's URL path ends in /3rdparty/v1: the cloud (api.sms-gate.app) or a private server. */
export function isCloudUrl(url: string): boolean {
  return URL.canParse(url) && new URL(url).pathname.replace(/\/+$/, "").endsWith("/3rdparty/v1");
}

const CLOUD_DEVICE_REQUIRED =
  "required when url is the cloud or a private server (a path ending in /3rdparty/v1): there a send without a device goes out from any phone of the account, and a retry could go out from another";

/** The android line's non-secret settings (CONTRACT §18, §19): an unknown field is refused. */
export const androidSettingsSchema = z
  .strictObject({
    url: z.url({ protocol: /^https?$/, error: "must be an http(s) URL, e.g. https://phone.example.com or https://api.sms-gate.app/3rdparty/v1" }),
    username: z.string().min(1, "must not be empty"),
    // client-go domain_messages.go: a device id is at most 21 characters (the server's nanoid).
    device_id: z.string().min(1, "must not be empty").max(21, "must be at most 21 characters").optional(),
    // client-go domain_messages.go: simNumber 1-3.
    sim_number: z.int("must be an integer from 1 to 3").min(1, "must be from 1 to 3").max(3, "must be from 1 to 3").optional(),
    send_timeout_ms: z.int("must be an integer").min(1000, "must be at least 1000").optional(),
  })
  .superRefine((s, ctx) => {
    if (isCloudUrl(s.url) && !s.device_id) ctx.addIssue({ code: "custom", path: ["device_id"], message: CLOUD_DEVICE_REQUIRED });
  });
export type AndroidSettings = z.infer<typeof androidSettingsSchema>;

/** The android line's credentials: the app's password and its webhook signing key. */
export const androidCredentialsSchema = z.strictObject({
  password: z.string().min(1, "must not be empty"),
  signing_key: z.string().min(1, "must not be empty"),
});
export type AndroidCredentials = z.infer<typeof androidCredentialsSchema>;

/** `settings.device_id: required …` when the settings are cloud mode without a device; undefined when they are fine. */
export function androidSettingsProblem(settings: { url: string; device_id?: string | undefined }): string | undefined {
  return isCloudUrl(settings.url) && !settings.device_id ? `settings.device_id: ${CLOUD_DEVICE_REQUIRED}` : undefined;
}

/** A send waits this long by default: both servers answer once the message is queued (MessagesRoutes.kt post, 3rdparty.go post). */
export const ANDROID_SEND_TIMEOUT_MS = 30_000;

/** The events we register, each under its own id (client-go domain_webhooks.go names them). */
const EVENTS = { received: "sms:received", sent: "sms:sent", delivered: "sms:delivered", failed: "sms:failed" } as const;

/**
 * Our webhook id for an event: `<prefix>-<event>`. The server keeps ids of at most 36
 * characters (client-go Webhook `max=36`; modules/webhooks/models.go varchar(36)): a longer
 * prefix is replaced by a hash of it, still the same for the same line.
 */
export function androidWebhookId(prefix: string, event: keyof typeof EVENTS): string {
  const id = `${prefix}-${event}`;
  return id.length <= 36 ? id : `tw${createHash("sha256").update(prefix).digest("hex").slice(0, 16)}-${event}`;
}

/**
 * ProcessingState (domain/ProcessingState.kt; client-go domain_messages.go) onto ours; a
 * Pending message is still queued on the phone, which is no change (undefined).
 */
const STATE: Record<string, StatusEvent["status"] | undefined> = {
  Pending: undefined,
  Processed: "sent",
  Sent: "sent",
  Delivered: "delivered",
  Failed: "failed",
  Cancelling: undefined,
  Cancelled: "failed",
};

/** The events that report a state of one of our messages (modules/webhooks/EventsReceiver.kt), with the payload field of its time. */
const STATUS_EVENTS: Record<string, { state: string; at: string }> = {
  "sms:sent": { state: "Sent", at: "sentAt" },
  "sms:delivered": { state: "Delivered", at: "deliveredAt" },
  "sms:failed": { state: "Failed", at: "failedAt" },
  "sms:cancelled": { state: "Cancelled", at: "cancelledAt" },
};

/** PayloadSingingPlugin.kt signs with the current Unix time: an older or newer one is refused. */
const MAX_SKEW_S = 300;
/** Calls other than sends (the device route, webhook registration). */
const CALL_TIMEOUT_MS = 15_000;
/**
 * The server answers 503 when its queue limiter holds the device (modules/messages/limiter.go)
 * without a Retry-After; the limit is cached for StatsCacheTTL, 60 s by default
 * (internal/config/config.go), so that is how long to wait.
 */
const QUEUE_FULL_RETRY_AFTER = "60";

/** WebHookEventDTO.kt: what every webhook posts. */
interface GatewayEvent {
  id?: string;
  webhookId?: string;
  event?: string;
  deviceId?: string;
  payload?: Record<string, unknown>;
}

/** client-go domain_devices.go Device, localserver/domain/Device.kt. */
interface GatewayDevice {
  id?: string;
  name?: string;
  lastSeen?: string;
  simCards?: { simNumber?: number; phoneNumber?: string }[];
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** PayloadSingingPlugin.kt generateSignature: hex HMAC-SHA256 of the body text followed by the timestamp. */
export function androidSignature(signingKey: string, body: string, timestamp: string): string {
  return createHmac("sha256", signingKey).update(body + timestamp, "utf8").digest("hex");
}

const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
const ms = (v: unknown) => {
  const t = typeof v === "string" ? Date.parse(v) : NaN;
  return Number.isNaN(t) ? undefined : t;
};

/** SMS through SMS Gateway for Android: sends by the local or cloud API, reports and texts by signed webhooks. */
export function createAndroidNetwork(config: AndroidConfig): AndroidNetwork {
  const base = config.url.replace(/\/+$/, "");
  const cloud = isCloudUrl(base);
  const label = config.label ?? "android";
  const auth = `Basic ${Buffer.from(`${config.username}:${config.password}`).toString("base64")}`;
  const log = config.log;

  /** The gateway's `{ message }` (client-go ErrorResponse; the app's StatusPages), or the status. */
  async function reason(res: Response): Promise<string> {
    const text = await res.text().catch(() => "");
    let message: unknown;
    try {
      message = (JSON.parse(text) as { message?: unknown }).message;
    } catch {
      message = undefined;
    }
    return typeof message === "string" && message ? message : `HTTP ${res.status}`;
  }

  /** A call other than a send; a network failure is BAD_GATEWAY naming the line. */
  async function call(method: "GET" | "POST" | "DELETE", path: string, body?: unknown): Promise<Response> {
    try {
      return await tracedFetch(`${base}${path}`, {
        method,
        headers: { Authorization: auth, Accept: "application/json", ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
    } catch (err) {
      throw new AppError("BAD_GATEWAY", `${label}: unreachable (${(err as Error).name})`);
    }
  }

  const refusedLogin = (status: number) => status === 401 || status === 403;

  /** Turns one verified event into ours; anything else (system:ping, mms:received…) is no event. */
  function eventsOf(e: GatewayEvent): { inbound: InboundEvent[]; statuses: StatusEvent[] } {
    const p = e.payload ?? {};
    const messageId = str(p.messageId);
    if (e.event === "sms:received") {
      // SmsEventPayload.kt SmsReceived: `sender`, and the deprecated `phoneNumber` older apps send alone.
      const phone = str(p.sender) ?? str(p.phoneNumber);
      const message = typeof p.message === "string" ? p.message : "";
      if (!messageId || !phone) return { inbound: [], statuses: [] };
      return { inbound: [{ phone, message, networkId: messageId }], statuses: [] };
    }
    const kind = e.event ? STATUS_EVENTS[e.event] : undefined;
    if (kind && messageId) {
      const status = STATE[kind.state]!;
      const at = ms(p[kind.at]);
      const failure = status === "failed" ? `${label}: ${kind.state === "Cancelled" ? "cancelled on the phone" : (str(p.reason) ?? "failed on the phone")}` : undefined;
      // The gateway's id of our message is our own id (send passes it as `id`).
      return {
        inbound: [],
        statuses: [{ messageId, networkId: messageId, networkStatus: kind.state, status, ...(at !== undefined ? { at } : {}), ...(failure ? { error: failure } : {}) }],
      };
    }
    // mms:received and mms:downloaded: inbound MMS is not taken yet (docs/networks.md).
    log?.debug("android: webhook event not used", { event: e.event, id: e.id });
    return { inbound: [], statuses: [] };
  }

  return {
    name: "android",
    // The app sends SMS text only: no MMS, reactions, typing, read receipts, edits, groups or threads.
    capabilities: { reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: false, threads: false },

    /**
     * POST {url}/messages (localserver/routes/MessagesRoutes.kt post; server
     * handlers/messages/3rdparty.go post) with our id as the gateway's: a retry after a
     * timeout is refused as a duplicate (409) instead of going out twice.
     */
    async send({ id, phone, text }) {
      const body = {
        id,
        textMessage: { text },
        phoneNumbers: [phone],
        withDeliveryReport: true,
        ...(config.simNumber !== undefined ? { simNumber: config.simNumber } : {}),
        ...(config.deviceId ? { deviceId: config.deviceId } : {}),
      };
      let res: Response;
      try {
        res = await tracedFetch(`${base}/messages`, {
          method: "POST",
          headers: { Authorization: auth, "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(config.sendTimeoutMs),
        });
      } catch (err) {
        // A refused connection (the phone off, asleep or off the network) sent nothing; a timeout may have.
        throw sendRequestFailure(label, err);
      }
      // 202 with the message's state, Pending: the phone has it (our "sent" is "the network took it", as Twilio's queued is).
      if (res.status === 202 || res.status === 200 || res.status === 201) {
        await res.body?.cancel().catch(() => {});
        return { networkId: id, status: "sent" };
      }
      const why = await reason(res);
      // The app's ConflictException and the server's ErrMessageAlreadyExists: the gateway
      // already has this id (a send whose answer was lost). Its own reports say the rest.
      if (res.status === 409) {
        log?.info("android: the gateway already had this message", { messageId: id });
        return { networkId: id, status: "sent" };
      }
      if (res.status === 503) {
        throw new AppError("TOO_MANY_REQUESTS", `${label}: the gateway's queue is full (${why})`, { "Retry-After": res.headers.get("retry-after") ?? QUEUE_FULL_RETRY_AFTER });
      }
      if (res.status === 429) throw new AppError("TOO_MANY_REQUESTS", `${label}: ${why}`, { "Retry-After": res.headers.get("retry-after") ?? "1" });
      // A TLS proxy in front of the phone gave up waiting: the phone may have it.
      if (res.status === 504) throw new SendOutcomeUnknown(`${label}: the proxy in front of the phone timed out`);
      // A device the gateway does not know or that is not this phone is the line's settings, not the request.
      if (res.status === 400 && /device/i.test(why)) throw new AppError("BAD_GATEWAY", `${label}: ${why} (settings.device_id)`);
      if (res.status === 400) throw new AppError("BAD_REQUEST", `${label}: ${why}`);
      if (refusedLogin(res.status)) throw new AppError("BAD_GATEWAY", `${label}: the gateway refused the username or password (${res.status})`);
      throw new AppError("BAD_GATEWAY", `${label}: ${why}`);
    },

    async webhook({ headers, body }) {
      const timestamp = headers.get("x-timestamp") ?? "";
      const signature = (headers.get("x-signature") ?? "").toLowerCase();
      if (!signature || !sameSecret(signature, androidSignature(config.signingKey, body, timestamp))) {
        throw new AppError("UNAUTHORIZED", "x-signature: missing or wrong");
      }
      const seconds = /^\d{1,12}$/.test(timestamp) ? Number(timestamp) : NaN;
      if (!(Math.abs(Date.now() / 1000 - seconds) <= MAX_SKEW_S)) throw new AppError("UNAUTHORIZED", "x-timestamp: more than 5 minutes off");
      let event: GatewayEvent;
      try {
        event = JSON.parse(body) as GatewayEvent;
      } catch {
        throw new AppError("BAD_REQUEST", "body: not JSON");
      }
      if (!event || typeof event !== "object") throw new AppError("BAD_REQUEST", "body: not a webhook event");
      const ok = new Response(null, { status: 204 });
      if (config.deviceId && event.deviceId && event.deviceId !== config.deviceId) {
        log?.warn("android: webhook from another device ignored", { deviceId: event.deviceId, event: event.event });
        return { ...webhookEvents([], []), response: ok };
      }
      const { inbound, statuses } = eventsOf(event);
      return { ...webhookEvents(inbound, statuses), response: ok };
    },

    /**
     * Messages whose outcome was unknown: GET {url}/messages/{id} (MessagesRoutes.kt get("{id}");
     * 3rdparty.go get). One the gateway does not know after the send's timeout never got there.
     */
    async reconcile(pending) {
      const reports: StatusEvent[] = [];
      for (const p of pending) {
        let res: Response;
        try {
          res = await call("GET", `/messages/${encodeURIComponent(p.id)}`);
        } catch {
          break;
        }
        if (res.status === 404) {
          await res.body?.cancel().catch(() => {});
          // A message the phone reported on may since have left its history: only a queued one is lost.
          if (p.status === "queued" && Date.now() - p.createdAt > 2 * config.sendTimeoutMs) {
            reports.push({ messageId: p.id, networkStatus: "not found", status: "failed", error: `${label}: the gateway never got the message` });
          }
          continue;
        }
        if (!res.ok) {
          await res.body?.cancel().catch(() => {});
          continue;
        }
        const state = ((await res.json().catch(() => ({}))) as { state?: string }).state ?? "";
        const status = STATE[state];
        if (status) reports.push({ messageId: p.id, networkId: p.id, networkStatus: state, status });
      }
      return reports;
    },

    /**
     * Local: GET {url}/device (WebService.kt), the phone itself. Cloud: GET {url}/devices
     * (handlers/devices/3rdparty.go), which must list our device. Both need the credentials.
     */
    async check() {
      let res: Response;
      try {
        res = await call("GET", cloud ? "/devices" : "/device");
      } catch (err) {
        return { ok: false, detail: `${(err as Error).message}: is the phone on, with the app's server started, and the URL right?` };
      }
      if (refusedLogin(res.status)) return { ok: false, detail: `${label}: the gateway refused the username or password (${res.status})` };
      if (!res.ok) return { ok: false, detail: `${label}: the gateway answered ${await reason(res)}` };
      const list = (await res.json().catch(() => null)) as GatewayDevice[] | null;
      if (!Array.isArray(list)) return { ok: false, detail: `${label}: the gateway's device list was unreadable` };
      const device = config.deviceId ? list.find((d) => d.id === config.deviceId) : list[0];
      if (!device) {
        const known = list.map((d) => d.id).join(", ") || "none";
        return { ok: false, detail: `settings.device_id: ${config.deviceId ?? "(none)"} is not ${cloud ? "among the account's devices" : "this phone"} (${known})` };
      }
      const sims = (device.simCards ?? []).map((s) => s.simNumber).filter((n): n is number => typeof n === "number");
      if (config.simNumber !== undefined && sims.length > 0 && !sims.includes(config.simNumber)) {
        return { ok: false, detail: `settings.sim_number: the phone has no SIM ${config.simNumber} (it has ${sims.join(", ")})` };
      }
      const seen = device.lastSeen ? `, last seen ${device.lastSeen}` : "";
      return { ok: true, detail: `${label}: device ${device.id} (${device.name ?? "unnamed"})${seen}${sims.length ? `, SIM ${sims.join(", ")}` : ""}` };
    },

    /**
     * POST {url}/webhooks `{ id, url, event, deviceId? }` per event: the app's
     * WebHooksService.replace and the server's webhooks Service.Replace upsert by id.
     */
    async register() {
      for (const [key, event] of Object.entries(EVENTS) as [keyof typeof EVENTS, string][]) {
        const res = await call("POST", "/webhooks", {
          id: androidWebhookId(config.webhookIdPrefix, key),
          url: config.webhookUrl,
          event,
          ...(config.deviceId ? { deviceId: config.deviceId } : {}),
        });
        if (res.ok) {
          await res.body?.cancel().catch(() => {});
          continue;
        }
        if (refusedLogin(res.status)) throw new AppError("BAD_GATEWAY", `${label}: the gateway refused the username or password (${res.status})`);
        throw new AppError("BAD_GATEWAY", `${label}: registering the ${event} webhook failed: ${await reason(res)}`);
      }
    },

    /** DELETE {url}/webhooks/{id}: 204 whether or not it was there (WebhooksRoutes.kt, handlers/webhooks/3rdparty.go). */
    async unregister() {
      for (const key of Object.keys(EVENTS) as (keyof typeof EVENTS)[]) {
        const res = await call("DELETE", `/webhooks/${encodeURIComponent(androidWebhookId(config.webhookIdPrefix, key))}`);
        if (res.ok || res.status === 404) {
          await res.body?.cancel().catch(() => {});
          continue;
        }
        throw new AppError("BAD_GATEWAY", `${label}: removing the ${EVENTS[key]} webhook failed: ${await reason(res)}`);
      }
    },
  };
}
