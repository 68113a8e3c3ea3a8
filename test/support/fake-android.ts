/**
 * A stand-in for SMS Gateway for Android on 127.0.0.1, written from its source:
 * the app (github.com/capcom6/android-sms-gateway, files under
 * app/src/main/java/me/capcom/smsgateway/, read at 0cdc5d8) and its cloud or private server
 * (github.com/android-sms-gateway/server at 22074dd, with the shared types of
 * github.com/android-sms-gateway/client-go at 9b59987).
 *
 * Two modes, one API (CONTRACT §19):
 *
 * - `local`: the phone's own server, routes at the root (modules/localserver/WebService.kt):
 *   `GET /health` without auth; with HTTP Basic (realm "Access to SMS Gateway"): `GET /device`
 *   (one Device with its simCards), `POST|GET /messages` (and `/message`), `GET /messages/{id}`,
 *   `POST|GET /webhooks` (and `/webhook`), `DELETE /webhooks/{id}`. A refused login is ktor's
 *   401 with `WWW-Authenticate: Basic` and no body; other errors are `{ message }`.
 * - `cloud`: the server's third-party API under `/3rdparty/v1` (handlers/3rdparty.go):
 *   `GET /devices`, `POST|GET /messages`, `GET /messages/:id`, `POST|GET /webhooks`,
 *   `DELETE /webhooks/:id`, `GET /inbox` 501. Errors are client-go's ErrorResponse `{ message }`
 *   (smsgateway/responses.go). The phone still does the sending and posts the webhooks itself
 *   (the app's WebHooksService.emit, source Cloud).
 *
 * Sends (localserver/routes/MessagesRoutes.kt post; server handlers/messages/3rdparty.go post):
 * 202 with the message's state (`Pending`). The same `id` again is 409 — the app's
 * ConflictException "Message with the same ID already exists" (Room primary key), the
 * server's ErrMessageAlreadyExists "message with the same ID already exists", unique per
 * (id, device) there (modules/messages/models.go unq_messages_id_device); the server takes
 * ids of at most 36 characters and device ids of at most 21 (client-go domain_messages.go),
 * and without `deviceId` picks any device of the account (modules/devices/service.go
 * GetAny). The local server refuses another device's id (400 "Invalid device ID"). The
 * server's queue limiter (modules/messages/limiter.go) answers 503 "queue limits exceeded:
 * <reason>", with no Retry-After.
 *
 * Webhooks (modules/webhooks/): registered with an `id` (the same id replaces:
 * WebHooksService.replace upserts; the server's Repository.Replace is an upsert on (user,
 * id)); the app takes `https://` or `http://127.0.0.1` URLs, the server only `https://`
 * (client-go domain_webhooks.go Validate). Each event is `{ id, webhookId, event, deviceId,
 * payload }` (domain/WebHookEventDTO.kt), serialized by Gson (nulls left out, dates
 * `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`, extensions/GsonBuilder.kt), signed by
 * plugins/PayloadSingingPlugin.kt: `X-Timestamp` is Unix seconds and `X-Signature` the hex
 * HMAC-SHA256, keyed by the signing key, of the body text followed by that timestamp. A post
 * answered outside 2xx, or not answered, is retried with the delay doubling from a base
 * (workers/WebhookQueueProcessorWorker.kt, db/WebhookQueueRepository.kt: 5 s, 15 retries
 * by default, WebhooksSettings.kt); here the base and count are small so tests run fast.
 * Events: `sms:sent`, `sms:delivered`, `sms:failed`, `sms:cancelled` when a message changes
 * state (EventsReceiver.kt), `sms:received` for a text (receiver/ReceiverService.kt: its
 * messageId is the inbox message's 32-bit hash in hex). Payload fields:
 * payload/SmsEventPayload.kt and MessageEventPayload.kt.
 */
import { createHmac, randomBytes } from "node:crypto";

/** domain/ProcessingState.kt. */
export type ProcessingState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelling" | "Cancelled";
export type WebhookEvent = "sms:received" | "sms:sent" | "sms:delivered" | "sms:failed" | "sms:cancelled" | "sms:data-received" | "mms:received" | "mms:downloaded" | "system:ping" | "app:started";
/** modules/webhooks/domain/WebHookEvent.kt. */
const EVENTS: readonly string[] = ["sms:received", "sms:sent", "sms:delivered", "sms:failed", "system:ping", "sms:data-received", "mms:received", "mms:downloaded", "app:started", "sms:cancelled"];

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  rawBody: string;
}

/** A message the gateway took: one per (device, id). */
export interface GatewayMessage {
  id: string;
  deviceId: string;
  phoneNumbers: string[];
  text: string;
  simNumber?: number;
  withDeliveryReport: boolean;
  state: ProcessingState;
  states: Partial<Record<ProcessingState, string>>;
}

export interface RegisteredWebhook {
  id: string;
  url: string;
  event: string;
  deviceId: string | null;
}

/** One post of a webhook event (every attempt is one). */
export interface WebhookDelivery {
  /** The URL as registered. */
  url: string;
  /** Where it was really posted (through the TLS proxy, when the URL is under its public URL). */
  target: string;
  event: string;
  eventId: string;
  attempt: number;
  body: string;
  headers: Record<string, string>;
  /** 0 when no answer came. */
  status: number;
}

export interface FakeAndroidOptions {
  mode?: "local" | "cloud";
  username?: string;
  password?: string;
  signingKey?: string;
  /** The account's phones (cloud; ids of 21 characters) or the phone's id (local, the first). */
  devices?: string[];
  /** The SIM slots the phone has (1-based simNumber). */
  sims?: number[];
  /** The SIM's own number: `sender` of our texts' events, `recipient` of inbound ones. */
  ownNumber?: string;
  /** Failed webhook posts are retried `count` times, the delay doubling from `baseMs`. */
  retry?: { count: number; baseMs: number };
  /** The TLS proxy in front of Textwire: webhook URLs under `publicUrl` are posted to `to`. */
  proxy?: { publicUrl: string; to: string };
  /** The phone works through what it takes by itself (Processed, Sent, then Delivered). */
  auto?: boolean;
  /** The phone's time zone, for the dates in its payloads (Gson writes the local offset). */
  utcOffsetMinutes?: number;
}

export interface FakeAndroid {
  mode: "local" | "cloud";
  /** The `url` of an android line: the origin (local) or the origin + /3rdparty/v1 (cloud). */
  url: string;
  origin: string;
  port: number;
  username: string;
  password: string;
  signingKey: string;
  /** The account's devices; the first is "the phone". */
  devices: string[];
  deviceId: string;
  requests: RecordedRequest[];
  /** What the gateway took, in order. */
  messages: GatewayMessage[];
  /** What is registered now. */
  webhooks: RegisteredWebhook[];
  /** Every webhook post, in order of attempts. */
  deliveries: WebhookDelivery[];
  /** The phone works through accepted messages by itself. */
  auto: boolean;
  /** Cloud: the queue limiter's reason; every send is 503 while it is set. */
  queueFull: string | null;
  /** The answer to a send comes this late (the message is taken at once, as a slow network would do). */
  answerDelayMs: number;
  readonly phoneOn: boolean;
  /**
   * Turns the phone off (local: its server stops listening, connections are refused; cloud:
   * the server still takes messages but the phone does nothing until it is back) or on again
   * (it then works through what waited and posts what it owed).
   */
  setPhone(on: boolean): Promise<void>;
  /** A text arrives on the phone: `sms:received` is posted; returns its messageId. */
  receive(p: { from: string; text: string; simNumber?: number; at?: Date }): string;
  /** The phone moves a message through these states, posting each one's event, in this order. */
  report(id: string, states: ProcessingState[], opts?: { reason?: string; deviceId?: string }): void;
  /** The message with this id (on `deviceId`, default any). */
  message(id: string, deviceId?: string): GatewayMessage | undefined;
  /** Waits (bounded) until `n` webhook posts were answered 2xx. */
  waitForDelivered(n: number, ms?: number): Promise<WebhookDelivery[]>;
  /** Waits (bounded) until every queued webhook post ended (delivered or given up). */
  idle(ms?: number): Promise<void>;
  stop(): Promise<void>;
}

/** NanoIdUtils.randomNanoId(): 21 characters of A-Za-z0-9_- (the app's and server's ids). */
export function nanoid(size = 21): string {
  const alphabet = "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return [...randomBytes(size)].map((b) => alphabet[b & 63]).join("");
}

/** plugins/PayloadSingingPlugin.kt generateSignature: hex HMAC-SHA256 of the body text + the timestamp. */
export function signAndroidWebhook(signingKey: string, body: string, timestamp: string): string {
  return createHmac("sha256", Buffer.from(signingKey, "utf8")).update(Buffer.from(body + timestamp, "utf8")).digest("hex");
}

/** Java's String.hashCode, for the inbox message's id (ReceiverService.kt: hashCode().toUInt().toString(16)). */
function javaHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h >>> 0;
}

/** Gson's `yyyy-MM-dd'T'HH:mm:ss.SSSXXX` in the phone's zone (extensions/GsonBuilder.kt). */
function gsonDate(d: Date, offsetMinutes: number): string {
  const local = new Date(d.getTime() + offsetMinutes * 60_000).toISOString().slice(0, 23);
  if (offsetMinutes === 0) return `${local}Z`;
  const abs = Math.abs(offsetMinutes);
  return `${local}${offsetMinutes < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** Gson leaves null fields out. */
const compact = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null));

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => Response.json(body, { status, headers });
const error = (status: number, message: string) => json(status, { message });

/** The payload of a state change's event (EventsReceiver.kt); Gson writes a subclass's fields before its parent's. */
const STATE_EVENTS: Partial<Record<ProcessingState, { event: WebhookEvent; at: string }>> = {
  Sent: { event: "sms:sent", at: "sentAt" },
  Delivered: { event: "sms:delivered", at: "deliveredAt" },
  Failed: { event: "sms:failed", at: "failedAt" },
  Cancelled: { event: "sms:cancelled", at: "cancelledAt" },
};

export function startFakeAndroid(opts: FakeAndroidOptions = {}): FakeAndroid {
  const mode = opts.mode ?? "local";
  const username = opts.username ?? "sms";
  const password = opts.password ?? randomBytes(6).toString("hex");
  // WebhooksSettings.kt: a fresh install makes an 8-character key.
  const signingKey = opts.signingKey ?? nanoid(8);
  const devices = opts.devices ?? [nanoid()];
  const sims = opts.sims ?? [1];
  const retry = opts.retry ?? { count: 6, baseMs: 5 };
  const offset = opts.utcOffsetMinutes ?? 0;
  const basic = `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}`;
  const prefix = mode === "cloud" ? "/3rdparty/v1" : "";

  const requests: RecordedRequest[] = [];
  const messages: GatewayMessage[] = [];
  const webhooks: RegisteredWebhook[] = [];
  const deliveries: WebhookDelivery[] = [];
  /** Events the phone owes while it is off, and posts in flight. */
  let owed: (() => void)[] = [];
  let inFlight = 0;
  let chain: Promise<void> = Promise.resolve();
  let stopped = false;
  const state = { phoneOn: true, auto: opts.auto ?? false, queueFull: null as string | null, answerDelayMs: 0 };

  const now = () => gsonDate(new Date(), offset);

  function deviceDto(id: string) {
    const t = new Date().toISOString();
    // localserver/domain/Device.kt and SimCard.kt; client-go smsgateway/domain_devices.go.
    return {
      id,
      name: "Google/Pixel 7",
      createdAt: t,
      updatedAt: t,
      lastSeen: t,
      simCards: sims.map((n) => compact({ slotIndex: n - 1, simNumber: n, phoneNumber: opts.ownNumber, carrierName: "Test Mobile" })),
    };
  }

  /** localserver/domain/messages/Message.kt; client-go MessageState. */
  function stateDto(m: GatewayMessage) {
    return {
      id: m.id,
      deviceId: m.deviceId,
      state: m.state,
      isHashed: false,
      isEncrypted: false,
      recipients: m.phoneNumbers.map((phoneNumber) => ({ phoneNumber, state: m.state })),
      states: m.states,
    };
  }

  /** WebHooksService.emit: one event per registered webhook of that event (and of this device, in the cloud). */
  function emit(event: WebhookEvent, payload: Record<string, unknown>, deviceId: string) {
    const send = () => {
      for (const hook of webhooks.filter((w) => w.event === event && (w.deviceId === null || w.deviceId === deviceId))) {
        const body = JSON.stringify({ id: nanoid(), webhookId: hook.id, event, deviceId, payload: compact(payload) });
        post(hook.url, event, JSON.parse(body).id as string, body, 1);
      }
    };
    if (state.phoneOn) send();
    else owed.push(send);
  }

  /** One post, in queue order; a failure schedules the next attempt after a doubling delay. */
  function post(url: string, event: string, eventId: string, body: string, attempt: number) {
    inFlight++;
    chain = chain.then(async () => {
      if (stopped) return;
      const target = opts.proxy && url.startsWith(opts.proxy.publicUrl) ? opts.proxy.to + url.slice(opts.proxy.publicUrl.length) : url;
      const timestamp = String(Math.floor(Date.now() / 1000));
      const headers = {
        "Content-Type": "application/json",
        "User-Agent": "me.capcom.smsgateway/1.60.0",
        "X-Timestamp": timestamp,
        "X-Signature": signAndroidWebhook(signingKey, body, timestamp),
      };
      let status = 0;
      try {
        const res = await fetch(target, { method: "POST", headers, body, signal: AbortSignal.timeout(30_000) });
        status = res.status;
        await res.arrayBuffer();
      } catch {
        status = 0;
      }
      deliveries.push({ url, target, event, eventId, attempt, body, headers, status });
      if ((status < 200 || status > 299) && attempt <= retry.count && !stopped) {
        inFlight++;
        setTimeout(() => {
          inFlight--;
          post(url, event, eventId, body, attempt + 1);
        }, retry.baseMs * 2 ** (attempt - 1));
      }
    });
    void chain.finally(() => inFlight--);
  }

  function moveTo(m: GatewayMessage, next: ProcessingState, reason?: string) {
    m.state = next;
    m.states[next] = now();
    const change = STATE_EVENTS[next];
    if (!change) return;
    for (const recipient of m.phoneNumbers) {
      const extra = next === "Sent" ? { partsCount: 1 } : {};
      emit(
        change.event,
        {
          ...extra,
          [change.at]: now(),
          ...(next === "Failed" ? { reason: reason ?? "Unknown" } : {}),
          messageId: m.id,
          sender: opts.ownNumber,
          recipient,
          simNumber: m.simNumber,
          phoneNumber: recipient,
        },
        m.deviceId,
      );
    }
  }

  /** What the phone does with a message by itself (SendMessagesWorker): it sends, then the carrier reports. */
  function work(m: GatewayMessage) {
    if (!state.phoneOn) {
      owed.push(() => work(m));
      return;
    }
    if (m.simNumber !== undefined && !sims.includes(m.simNumber)) {
      moveTo(m, "Failed", `SIM ${m.simNumber} not available`);
      return;
    }
    moveTo(m, "Processed");
    moveTo(m, "Sent");
    if (m.withDeliveryReport) moveTo(m, "Delivered");
  }

  function authorized(req: Request): Response | null {
    if (req.headers.get("authorization") === basic) return null;
    if (mode === "local") return new Response(null, { status: 401, headers: { "WWW-Authenticate": 'Basic realm="Access to SMS Gateway", charset=UTF-8' } });
    return error(401, "Unauthorized");
  }

  function send(body: Record<string, unknown>): Response {
    const text = (body.textMessage as { text?: unknown } | undefined)?.text ?? body.message;
    const phoneNumbers = body.phoneNumbers;
    const id = typeof body.id === "string" && body.id ? body.id : nanoid();
    const simNumber = typeof body.simNumber === "number" ? body.simNumber : undefined;
    if (typeof text !== "string" || text === "") return error(400, mode === "local" ? "Text message is empty" : "failed to validate: Key: 'Message.TextMessage.Text' Error:Field validation for 'Text' failed on the 'required' tag");
    if (!Array.isArray(phoneNumbers) || phoneNumbers.length === 0) return error(400, mode === "local" ? "Empty phone numbers list" : "failed to validate: Key: 'Message.PhoneNumbers' Error:Field validation for 'PhoneNumbers' failed on the 'min' tag");
    if (simNumber !== undefined && (simNumber < 1 || (mode === "cloud" && simNumber > 3))) return error(400, "SIM number cannot be less than 1");
    let deviceId: string;
    if (mode === "local") {
      // MessagesRoutes.kt: a deviceId must be this phone's.
      if (body.deviceId != null && body.deviceId !== devices[0]) return error(400, "Invalid device ID");
      deviceId = devices[0]!;
    } else {
      // client-go Message: id max 36, deviceId max 21; devices.GetAny picks any device without one.
      if (id.length > 36) return error(400, "failed to validate: Key: 'Message.ID' Error:Field validation for 'ID' failed on the 'max' tag");
      const wanted = typeof body.deviceId === "string" && body.deviceId ? body.deviceId : undefined;
      if (wanted && wanted.length > 21) return error(400, "failed to validate: Key: 'Message.DeviceID' Error:Field validation for 'DeviceID' failed on the 'max' tag");
      const candidates = wanted ? devices.filter((d) => d === wanted) : devices;
      if (candidates.length === 0) return error(400, "failed to select device: record not found");
      deviceId = candidates[Math.floor(Math.random() * candidates.length)]!;
      if (state.queueFull) return error(503, `failed to enqueue message: queue limits exceeded: ${state.queueFull}`);
      for (const p of phoneNumbers) if (typeof p !== "string" || !/^\+?\d{5,15}$/.test(p)) return error(400, `failed to enqueue message: failed to use phone in row 1: invalid phone number`);
    }
    const duplicate = messages.some((m) => m.id === id && (mode === "local" || m.deviceId === deviceId));
    if (duplicate) return error(409, mode === "local" ? "Message with the same ID already exists" : "message with the same ID already exists");
    const m: GatewayMessage = {
      id,
      deviceId,
      phoneNumbers: phoneNumbers as string[],
      text,
      ...(simNumber !== undefined ? { simNumber } : {}),
      withDeliveryReport: body.withDeliveryReport !== false,
      state: "Pending",
      states: { Pending: now() },
    };
    messages.push(m);
    if (state.auto) setTimeout(() => work(m), 0);
    return json(202, stateDto(m), mode === "cloud" ? { Location: `/3rdparty/v1/messages/${encodeURIComponent(id)}` } : {});
  }

  function register(body: Record<string, unknown>): Response {
    const url = typeof body.url === "string" ? body.url : "";
    const event = typeof body.event === "string" ? body.event : "";
    const deviceId = typeof body.deviceId === "string" ? body.deviceId : null;
    if (mode === "local") {
      // WebHooksService.replace and WebhooksRoutes.kt.
      if (deviceId !== null && deviceId !== devices[0]) return error(400, "Device ID mismatch");
      let valid = url.toLowerCase().startsWith("https://");
      if (!valid && url.toLowerCase().startsWith("http://")) valid = URL.canParse(url) && new URL(url).hostname === "127.0.0.1";
      if (!valid) return error(400, "url must start with https:// or http://127.0.0.1");
      if (!EVENTS.includes(event)) return error(400, "Unsupported event");
    } else {
      // client-go Webhook: id max 36, url http_url and https://; the service checks the event and the device.
      if (typeof body.id === "string" && body.id.length > 36) return error(400, "failed to validate: Key: 'Webhook.ID' Error:Field validation for 'ID' failed on the 'max' tag");
      if (!url || !URL.canParse(url)) return error(400, "failed to validate: Key: 'Webhook.URL' Error:Field validation for 'URL' failed on the 'http_url' tag");
      if (!EVENTS.includes(event) || event === "sms:cancelled") return error(400, "failed to validate: validation failed: invalid event type");
      if (!url.toLowerCase().startsWith("https://")) return error(400, "failed to validate: validation failed: url must start with https://");
      if (deviceId !== null && !devices.includes(deviceId)) return error(400, `invalid "device_id" value "${deviceId}": record not found`);
    }
    const id = typeof body.id === "string" && body.id ? body.id : nanoid();
    const hook: RegisteredWebhook = { id, url, event, deviceId: mode === "local" ? null : deviceId };
    const at = webhooks.findIndex((w) => w.id === id);
    if (at === -1) webhooks.push(hook);
    else webhooks[at] = hook;
    return json(201, mode === "local" ? { id, url, event, source: "Local" } : { id, deviceId, url, event });
  }

  async function handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const rawBody = await req.text();
    let body: unknown = undefined;
    if (rawBody) {
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
    }
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k.toLowerCase()] = v));
    requests.push({ method: req.method, path: url.pathname, headers, body, rawBody });

    if (!url.pathname.startsWith(prefix)) return new Response(null, { status: 404 });
    const path = url.pathname.slice(prefix.length).replace(/\/+$/, "") || "/";
    if (path === "/health" && req.method === "GET") return json(200, { status: "pass", version: "1", releaseId: 1, checks: {} });
    const denied = authorized(req);
    if (denied) return denied;
    const object = body && typeof body === "object" && !Array.isArray(body) ? (body as Record<string, unknown>) : undefined;
    if (rawBody && !object && req.method === "POST") return error(400, "Failed to convert request body");

    if (mode === "local" && path === "/device" && req.method === "GET") return json(200, [deviceDto(devices[0]!)]);
    if (mode === "cloud" && (path === "/devices" || path === "/device") && req.method === "GET") return json(200, devices.map(deviceDto));
    if (mode === "cloud" && path === "/inbox" && req.method === "GET") return error(501, "Inbox API is not implemented yet");

    if (path === "/messages" || path === "/message") {
      if (req.method === "POST") {
        const answer = send(object ?? {});
        if (state.answerDelayMs > 0) await Bun.sleep(state.answerDelayMs);
        return answer;
      }
      if (req.method === "GET") return json(200, messages.map(stateDto));
    }
    const one = /^\/messages?\/([^/]+)$/.exec(path);
    if (one && req.method === "GET") {
      const id = decodeURIComponent(one[1]!);
      const found = messages.filter((m) => m.id === id);
      if (found.length === 0) return mode === "local" ? new Response(null, { status: 404 }) : error(404, "message not found");
      if (found.length > 1) return error(400, "multiple messages found");
      return json(200, stateDto(found[0]!));
    }
    if (path === "/webhooks" || path === "/webhook") {
      if (req.method === "GET") return json(200, webhooks.map((w) => (mode === "local" ? { id: w.id, url: w.url, event: w.event, source: "Local" } : w)));
      if (req.method === "POST") return register(object ?? {});
    }
    const hook = /^\/webhooks?\/([^/]+)$/.exec(path);
    if (hook && req.method === "DELETE") {
      const at = webhooks.findIndex((w) => w.id === decodeURIComponent(hook[1]!));
      if (at !== -1) webhooks.splice(at, 1);
      return new Response(null, { status: 204 });
    }
    return mode === "local" ? new Response(null, { status: 404 }) : error(404, `Cannot ${req.method} ${url.pathname}`);
  }

  const listen = (port: number) => Bun.serve({ port, hostname: "127.0.0.1", idleTimeout: 0, fetch: handle });
  let server: ReturnType<typeof Bun.serve> | undefined = listen(0);
  const port = server.port!;
  const origin = `http://127.0.0.1:${port}`;

  return {
    mode,
    url: origin + prefix,
    origin,
    port,
    username,
    password,
    signingKey,
    devices,
    deviceId: devices[0]!,
    requests,
    messages,
    webhooks,
    deliveries,
    get auto() {
      return state.auto;
    },
    set auto(v) {
      state.auto = v;
    },
    get queueFull() {
      return state.queueFull;
    },
    set queueFull(v) {
      state.queueFull = v;
    },
    get answerDelayMs() {
      return state.answerDelayMs;
    },
    set answerDelayMs(v) {
      state.answerDelayMs = v;
    },
    get phoneOn() {
      return state.phoneOn;
    },
    async setPhone(on) {
      if (on === state.phoneOn) return;
      state.phoneOn = on;
      if (mode === "local") {
        if (on) server = listen(port);
        else {
          await server?.stop(true);
          server = undefined;
        }
      }
      if (on) {
        const waiting = owed;
        owed = [];
        for (const f of waiting) f();
      }
    },
    receive({ from, text, simNumber, at = new Date() }) {
      // ReceiverService.process: the inbox message's 32-bit hashCode as unsigned hex (here a
      // Java string hash of its fields): the same text posted again keeps its messageId.
      const messageId = javaHash(`Text(text=${text}, address=${from}, date=${at.getTime()}, subscriptionId=${simNumber ?? ""})`).toString(16);
      emit(
        "sms:received",
        { message: text, receivedAt: gsonDate(at, offset), messageId, sender: from, recipient: opts.ownNumber, simNumber, phoneNumber: from },
        devices[0]!,
      );
      return messageId;
    },
    report(id, states, { reason, deviceId } = {}) {
      const m = messages.find((x) => x.id === id && (!deviceId || x.deviceId === deviceId));
      if (!m) throw new Error(`fake android: no message ${id}`);
      for (const s of states) moveTo(m, s, reason);
    },
    message: (id, deviceId) => messages.find((m) => m.id === id && (!deviceId || m.deviceId === deviceId)),
    async waitForDelivered(n, ms = 10_000) {
      const deadline = Date.now() + ms;
      const ok = () => deliveries.filter((d) => d.status >= 200 && d.status < 300);
      while (ok().length < n) {
        if (Date.now() > deadline) throw new Error(`fake android: expected ${n} delivered webhooks within ${ms} ms, got ${ok().length}`);
        await Bun.sleep(5);
      }
      return ok();
    },
    async idle(ms = 10_000) {
      const deadline = Date.now() + ms;
      while (inFlight > 0) {
        if (Date.now() > deadline) throw new Error(`fake android: ${inFlight} webhook posts still pending after ${ms} ms`);
        await Bun.sleep(5);
      }
    },
    async stop() {
      stopped = true;
      await server?.stop(true);
    },
  };
}

/**
 * Posts a webhook event to Textwire as the phone does, with headers the test chooses: a
 * forged `signature`, a stale `timestamp` (Unix seconds), or none (null).
 */
export async function postAndroidWebhook(
  url: string,
  body: string,
  opts: { signingKey: string; timestamp?: string; signature?: string | null },
): Promise<{ status: number; text: string }> {
  const timestamp = opts.timestamp ?? String(Math.floor(Date.now() / 1000));
  const headers: Record<string, string> = { "Content-Type": "application/json", "X-Timestamp": timestamp };
  const signature = opts.signature === undefined ? signAndroidWebhook(opts.signingKey, body, timestamp) : opts.signature;
  if (signature !== null) headers["X-Signature"] = signature;
  const res = await fetch(url, { method: "POST", headers, body });
  return { status: res.status, text: await res.text() };
}
