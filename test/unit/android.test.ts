// The SMS Gateway for Android driver against the stand-in (test/support/fake-android.ts, written
// from the app's and the server's source), in local and cloud mode:
// - a send carries our id and body; a retried send after a timeout reaches the phone once;
// - the phone's reports, in any order and through its retries, settle the message by the status rule;
// - every webhook is signed by the phone and checked by the driver; forged or stale ones are 401;
// - webhook registration replaces rather than adds, and removal; check() and its details;
// - the cloud's 503 is TOO_MANY_REQUESTS with Retry-After; a phone that is off is BAD_GATEWAY naming the line;
// - the line's settings and credentials schemas.
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { AppError, fieldIssues } from "../../src/errors";
import type { StatusEvent, WebhookEvents } from "../../src/network/driver";
import { SendOutcomeUnknown } from "../../src/network/driver";
import {
  androidCredentialsSchema,
  androidSettingsProblem,
  androidSettingsSchema,
  androidSignature,
  androidWebhookId,
  createAndroidNetwork,
  isCloudUrl,
  type AndroidConfig,
  type AndroidNetwork,
} from "../../src/network/android";
import { canMoveTo, type MessageStatus } from "../../src/vocabulary/message-status";
import { nanoid, postAndroidWebhook, signAndroidWebhook, startFakeAndroid, type FakeAndroid } from "../support/fake-android";

setDefaultTimeout(20_000);

/** Where the phone posts: each request read by `current` driver, its events or its error kept. */
let receiver: ReturnType<typeof Bun.serve>;
let current: AndroidNetwork;
/** How many of the next posts the receiver answers 500 before reading them (Textwire briefly down). */
let failNext = 0;
let received: { event: string; id: string; events?: WebhookEvents; status: number }[] = [];
const PUBLIC_URL = "https://textwire.example.com";

beforeAll(() => {
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const body = await req.text();
      const parsed = JSON.parse(body) as { event: string; id: string };
      if (failNext > 0) {
        failNext--;
        received.push({ event: parsed.event, id: parsed.id, status: 500 });
        return new Response("down", { status: 500 });
      }
      try {
        const { response, ...events } = await current.webhook!({ url: new URL(req.url), subpath: "", headers: req.headers, body });
        received.push({ event: parsed.event, id: parsed.id, events, status: response.status });
        return response;
      } catch (err) {
        const status = err instanceof AppError && err.code === "UNAUTHORIZED" ? 401 : 500;
        received.push({ event: parsed.event, id: parsed.id, status });
        return new Response(null, { status });
      }
    },
  });
});
afterEach(() => {
  failNext = 0;
  received = [];
});
afterAll(async () => {
  await receiver?.stop(true);
});

const receiverUrl = () => `http://127.0.0.1:${receiver.port}/webhooks/lines/ln_test`;

let n = 0;
const newPhone = () => `+1415555${String(++n).padStart(4, "0")}`;

function driverFor(fake: FakeAndroid, overrides: Partial<AndroidConfig> = {}): AndroidNetwork {
  return createAndroidNetwork({
    url: fake.url,
    username: fake.username,
    password: fake.password,
    signingKey: fake.signingKey,
    sendTimeoutMs: 5_000,
    webhookUrl: receiverUrl(),
    webhookIdPrefix: "ln_test",
    label: 'android line "home"',
    ...overrides,
  });
}

async function failure(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

async function failsWith(p: Promise<unknown>, code: string, message: string | RegExp) {
  const err = await failure(p);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code as string).toBe(code);
  if (typeof message === "string") expect((err as AppError).message).toBe(message);
  else expect((err as AppError).message).toMatch(message);
  return err as AppError;
}

/** The status a message ends with when these reports are applied in order by the status rule, from `from`. */
const settle = (from: MessageStatus, reports: StatusEvent[]) => reports.reduce<MessageStatus>((s, r) => (canMoveTo(s, r.status) ? r.status : s), from);
const statuses = () => received.flatMap((r) => r.events?.statuses ?? []);
/** Runs `act`, then waits until the phone's posts answered 2xx grew by `k`. */
async function posted(fake: FakeAndroid, k: number, act: () => unknown): Promise<void> {
  const base = fake.deliveries.filter((d) => d.status >= 200 && d.status < 300).length;
  await act();
  await fake.waitForDelivered(base + k);
}

describe("local mode: the phone's own server", () => {
  let fake: FakeAndroid;
  let driver: AndroidNetwork;

  beforeAll(async () => {
    fake = startFakeAndroid({ mode: "local", ownNumber: "+14155550100" });
    driver = current = driverFor(fake, { deviceId: fake.deviceId });
    await driver.register();
  });
  afterEach(async () => {
    current = driver;
    fake.answerDelayMs = 0;
    await fake.setPhone(true);
    await fake.idle();
  });
  afterAll(async () => {
    await fake?.stop();
  });

  test("capabilities: SMS text only", () => {
    expect(driver.name).toBe("android");
    expect(driver.capabilities).toEqual({ reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: false, threads: false });
  });

  test("a send is POST /messages with Basic auth, our id as the gateway's, the text, the phone and a delivery report asked", async () => {
    const id = Bun.randomUUIDv7();
    const phone = newPhone();
    expect(id.length).toBeLessThanOrEqual(36);
    const sim = driverFor(fake, { deviceId: fake.deviceId, simNumber: 1 });
    expect(await sim.send({ id, phone, text: "Hello from the phone" })).toEqual({ networkId: id, status: "sent" });
    const req = fake.requests.filter((r) => r.method === "POST" && r.path === "/messages").at(-1)!;
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.username}:${fake.password}`).toString("base64")}`);
    expect(req.body).toEqual({ id, textMessage: { text: "Hello from the phone" }, phoneNumbers: [phone], withDeliveryReport: true, simNumber: 1, deviceId: fake.deviceId });
    expect(fake.message(id)).toMatchObject({ phoneNumbers: [phone], text: "Hello from the phone", state: "Pending", withDeliveryReport: true });
  });

  test("a send retried after a timeout reaches the phone once: the gateway refuses the same id (409) and the driver reads it as taken", async () => {
    const id = Bun.randomUUIDv7();
    const slow = driverFor(fake, { deviceId: fake.deviceId, sendTimeoutMs: 100 });
    fake.answerDelayMs = 400;
    const err = await failure(slow.send({ id, phone: newPhone(), text: "Once only" }));
    expect(err).toBeInstanceOf(SendOutcomeUnknown);
    fake.answerDelayMs = 0;
    expect(await slow.send({ id, phone: newPhone(), text: "Once only" })).toEqual({ networkId: id, status: "sent" });
    const posts = fake.requests.filter((r) => r.method === "POST" && r.path === "/messages" && (r.body as { id: string }).id === id);
    expect(posts).toHaveLength(2);
    expect(fake.messages.filter((m) => m.id === id)).toHaveLength(1);
  });

  test("the phone's reports, in any order, end delivered by the status rule; each is signed and verified", async () => {
    const id = Bun.randomUUIDv7();
    const phone = newPhone();
    await driver.send({ id, phone, text: "Out of order" });
    await posted(fake, 2, () => fake.report(id, ["Processed", "Delivered", "Sent"]));
    await fake.idle();
    expect(received.map((r) => [r.event, r.status])).toEqual([
      ["sms:delivered", 204],
      ["sms:sent", 204],
    ]);
    expect(statuses()).toEqual([
      { messageId: id, networkId: id, networkStatus: "Delivered", status: "delivered", at: expect.any(Number) },
      { messageId: id, networkId: id, networkStatus: "Sent", status: "sent", at: expect.any(Number) },
    ]);
    expect(settle("sent", statuses())).toBe("delivered");
    expect(settle("queued", statuses())).toBe("delivered");
    for (const d of fake.deliveries.slice(-2)) {
      expect(d.headers["X-Signature"]).toBe(androidSignature(fake.signingKey, d.body, d.headers["X-Timestamp"]!));
      expect(JSON.parse(d.body)).toMatchObject({ webhookId: `ln_test-${d.event.slice(4)}`, deviceId: fake.deviceId, payload: { messageId: id, recipient: phone, sender: "+14155550100" } });
    }
  });

  test("the report's time comes from the payload, whatever the phone's time zone", async () => {
    const zoned = startFakeAndroid({ mode: "local", utcOffsetMinutes: 420 });
    try {
      current = driverFor(zoned);
      await current.register();
      const id = Bun.randomUUIDv7();
      await current.send({ id, phone: newPhone(), text: "Zoned" });
      const before = Date.now();
      zoned.report(id, ["Sent"]);
      await zoned.waitForDelivered(1);
      const body = JSON.parse(zoned.deliveries[0]!.body) as { payload: { sentAt: string } };
      expect(body.payload.sentAt).toMatch(/\+07:00$/);
      const at = statuses()[0]!.at!;
      expect(Math.abs(at - before)).toBeLessThan(5_000);
    } finally {
      await zoned.stop();
    }
  });

  test("failed and cancelled are failed with the phone's reason; a late sent never undoes them", async () => {
    const id = Bun.randomUUIDv7();
    await driver.send({ id, phone: newPhone(), text: "Doomed" });
    await posted(fake, 2, () => fake.report(id, ["Failed", "Sent"], { reason: "RESULT_ERROR_NO_SERVICE" }));
    expect(statuses()[0]).toMatchObject({ messageId: id, networkStatus: "Failed", status: "failed", error: 'android line "home": RESULT_ERROR_NO_SERVICE' });
    expect(settle("sent", statuses())).toBe("failed");
    received = [];
    const other = Bun.randomUUIDv7();
    await driver.send({ id: other, phone: newPhone(), text: "Cancelled" });
    // sms:cancelled (EventsReceiver.kt) is not among the events registered; one that comes anyway is a failure.
    const body = JSON.stringify({ id: nanoid(), webhookId: "elsewhere", event: "sms:cancelled", deviceId: fake.deviceId, payload: { cancelledAt: "2026-01-01T10:00:00.000Z", messageId: other, recipient: "+14155550999", phoneNumber: "+14155550999" } });
    expect((await postAndroidWebhook(receiverUrl(), body, { signingKey: fake.signingKey })).status).toBe(204);
    expect(statuses()).toEqual([expect.objectContaining({ messageId: other, networkStatus: "Cancelled", status: "failed", error: 'android line "home": cancelled on the phone' })]);
  });

  test("a webhook Textwire did not take is posted again by the phone, the same event each time", async () => {
    const id = Bun.randomUUIDv7();
    await driver.send({ id, phone: newPhone(), text: "Retry me" });
    failNext = 2;
    await posted(fake, 1, () => fake.report(id, ["Sent"]));
    expect(received.map((r) => r.status)).toEqual([500, 500, 204]);
    expect(new Set(received.map((r) => r.id)).size).toBe(1);
    expect(fake.deliveries.slice(-3).map((d) => d.attempt)).toEqual([1, 2, 3]);
    expect(statuses()).toEqual([expect.objectContaining({ messageId: id, status: "sent" })]);
  });

  test("an inbound text: sender, text and the phone's messageId", async () => {
    const from = newPhone();
    let messageId = "";
    await posted(fake, 1, () => (messageId = fake.receive({ from, text: "Are you open today?" })));
    expect(received[0]!.events!.inbound).toEqual([{ phone: from, message: "Are you open today?", networkId: messageId }]);
    expect(received[0]!.events!.statuses).toEqual([]);
  });

  test("an older app's sms:received with phoneNumber and no sender", async () => {
    const body = JSON.stringify({ id: nanoid(), webhookId: "ln_test-received", event: "sms:received", deviceId: fake.deviceId, payload: { message: "Old app", receivedAt: "2026-01-01T10:00:00.000+02:00", messageId: "1a2b3c4d", phoneNumber: "+14155550999" } });
    const res = await postAndroidWebhook(receiverUrl(), body, { signingKey: fake.signingKey });
    expect(res.status).toBe(204);
    expect(received[0]!.events!.inbound).toEqual([{ phone: "+14155550999", message: "Old app", networkId: "1a2b3c4d" }]);
  });

  test("events the driver does not use (system:ping, mms:received) are answered and change nothing", async () => {
    for (const event of ["system:ping", "mms:received"]) {
      const body = JSON.stringify({ id: nanoid(), webhookId: "x", event, deviceId: fake.deviceId, payload: event === "system:ping" ? { health: {} } : { messageId: "m1", sender: "+14155550999", transactionId: "t", size: 10, contentClass: "MMS", receivedAt: "2026-01-01T10:00:00.000Z", phoneNumber: "+14155550999" } });
      expect((await postAndroidWebhook(receiverUrl(), body, { signingKey: fake.signingKey })).status).toBe(204);
    }
    expect(received.map((r) => [r.events!.inbound, r.events!.statuses])).toEqual([
      [[], []],
      [[], []],
    ]);
  });

  describe("every webhook is checked: X-Signature over the raw body and X-Timestamp, within 5 minutes", () => {
    const body = () => JSON.stringify({ id: nanoid(), webhookId: "ln_test-received", event: "sms:received", deviceId: fake.deviceId, payload: { message: "Hi", messageId: "abc", sender: "+14155550999", phoneNumber: "+14155550999" } });
    const call = (b: string, headers: Record<string, string>) => driver.webhook!({ url: new URL(receiverUrl()), subpath: "", headers: new Headers(headers), body: b });
    const now = () => String(Math.floor(Date.now() / 1000));

    test("a forged signature: 401", async () => {
      const b = body();
      const t = now();
      await failsWith(call(b, { "X-Timestamp": t, "X-Signature": signAndroidWebhook("not-the-key", b, t) }), "UNAUTHORIZED", "x-signature: missing or wrong");
      const res = await postAndroidWebhook(receiverUrl(), b, { signingKey: fake.signingKey, signature: "0".repeat(64) });
      expect(res.status).toBe(401);
    });

    test("a body changed after signing, or a timestamp changed after signing: 401", async () => {
      const b = body();
      const t = now();
      const sig = signAndroidWebhook(fake.signingKey, b, t);
      await failsWith(call(b.replace("Hi", "Ho"), { "X-Timestamp": t, "X-Signature": sig }), "UNAUTHORIZED", "x-signature: missing or wrong");
      await failsWith(call(b, { "X-Timestamp": String(Number(t) + 1), "X-Signature": sig }), "UNAUTHORIZED", "x-signature: missing or wrong");
    });

    test("no signature, or no timestamp: 401", async () => {
      const b = body();
      await failsWith(call(b, { "X-Timestamp": now() }), "UNAUTHORIZED", "x-signature: missing or wrong");
      await failsWith(call(b, { "X-Signature": signAndroidWebhook(fake.signingKey, b, "") }), "UNAUTHORIZED", "x-timestamp: more than 5 minutes off");
    });

    test("a timestamp more than 5 minutes old or ahead, even rightly signed: 401; within 5 minutes: taken", async () => {
      const b = body();
      for (const skew of [-301, 301]) {
        const t = String(Math.floor(Date.now() / 1000) + skew);
        await failsWith(call(b, { "X-Timestamp": t, "X-Signature": signAndroidWebhook(fake.signingKey, b, t) }), "UNAUTHORIZED", "x-timestamp: more than 5 minutes off");
      }
      const t = String(Math.floor(Date.now() / 1000) - 290);
      const { inbound } = await call(b, { "X-Timestamp": t, "X-Signature": signAndroidWebhook(fake.signingKey, b, t).toUpperCase() });
      expect(inbound).toEqual([{ phone: "+14155550999", message: "Hi", networkId: "abc" }]);
    });

    test("an event of another device of the account is ignored", async () => {
      const b = JSON.stringify({ ...JSON.parse(body()), deviceId: nanoid() });
      const t = now();
      const { inbound, response } = await call(b, { "X-Timestamp": t, "X-Signature": signAndroidWebhook(fake.signingKey, b, t) });
      expect(response.status).toBe(204);
      expect(inbound).toEqual([]);
    });
  });

  test("registering twice replaces the four webhooks (fixed ids), a new URL included; removal deletes them, twice is fine", async () => {
    const other = startFakeAndroid({ mode: "local" });
    try {
      const line = driverFor(other, { webhookIdPrefix: "ln_abc" });
      await line.register();
      await line.register();
      expect(other.webhooks.map((w) => [w.id, w.event, w.url]).sort()).toEqual(
        [
          ["ln_abc-delivered", "sms:delivered", receiverUrl()],
          ["ln_abc-failed", "sms:failed", receiverUrl()],
          ["ln_abc-received", "sms:received", receiverUrl()],
          ["ln_abc-sent", "sms:sent", receiverUrl()],
        ].sort(),
      );
      await driverFor(other, { webhookIdPrefix: "ln_abc", webhookUrl: "https://new.example.com/webhooks/lines/ln_abc" }).register();
      expect(other.webhooks).toHaveLength(4);
      expect(new Set(other.webhooks.map((w) => w.url))).toEqual(new Set(["https://new.example.com/webhooks/lines/ln_abc"]));
      // Another line's registrations are its own.
      await driverFor(other, { webhookIdPrefix: "ln_def" }).register();
      expect(other.webhooks).toHaveLength(8);
      await line.unregister();
      expect(other.webhooks.map((w) => w.id).sort()).toEqual(["ln_def-delivered", "ln_def-failed", "ln_def-received", "ln_def-sent"]);
      await line.unregister();
      expect(other.webhooks).toHaveLength(4);
    } finally {
      await other.stop();
    }
  });

  test("a webhook URL the app refuses (plain http beyond 127.0.0.1) fails registration with the app's reason", async () => {
    await failsWith(driverFor(fake, { webhookUrl: "http://192.168.1.20:3000/webhooks/lines/x", webhookIdPrefix: "ln_http" }).register(), "BAD_GATEWAY", 'android line "home": registering the sms:received webhook failed: url must start with https:// or http://127.0.0.1');
    expect(fake.webhooks.some((w) => w.id.startsWith("ln_http"))).toBe(false);
  });

  test("a long prefix gives ids of at most 36 characters, the same each time", () => {
    const long = `ln_${"a".repeat(32)}`;
    const ids = (["received", "sent", "delivered", "failed"] as const).map((e) => androidWebhookId(long, e));
    for (const id of ids) expect(id.length).toBeLessThanOrEqual(36);
    expect(new Set(ids).size).toBe(4);
    expect(androidWebhookId(long, "sent")).toBe(ids[1]!);
    expect(androidWebhookId("ln_short", "delivered")).toBe("ln_short-delivered");
  });

  test("check(): the phone's device route with the credentials", async () => {
    const result = await driver.check();
    expect(result.ok).toBe(true);
    expect(result.detail).toMatch(new RegExp(`^android line "home": device ${fake.deviceId} \\(Google/Pixel 7\\), last seen \\S+, SIM 1$`));
    expect(fake.requests.at(-1)!.path).toBe("/device");
  });

  test("check() fails with what failed: the password, the device, the SIM, the phone off", async () => {
    const wrong = await driverFor(fake, { password: "wrong" }).check();
    expect(wrong).toEqual({ ok: false, detail: 'android line "home": the gateway refused the username or password (401)' });
    const device = await driverFor(fake, { deviceId: "AAAAAAAAAAAAAAAAAAAAA" }).check();
    expect(device).toEqual({ ok: false, detail: `settings.device_id: AAAAAAAAAAAAAAAAAAAAA is not this phone (${fake.deviceId})` });
    const sim = await driverFor(fake, { simNumber: 2 }).check();
    expect(sim).toEqual({ ok: false, detail: "settings.sim_number: the phone has no SIM 2 (it has 1)" });
    await fake.setPhone(false);
    const off = await driver.check();
    expect(off.ok).toBe(false);
    expect(off.detail).toMatch(/^android line "home": unreachable \(.+\): is the phone on, with the app's server started, and the URL right\?$/);
  });

  test("the phone off: a send is BAD_GATEWAY naming the line, and nothing reached the phone; back on, it sends", async () => {
    await fake.setPhone(false);
    const id = Bun.randomUUIDv7();
    await failsWith(driver.send({ id, phone: newPhone(), text: "Anyone there?" }), "BAD_GATEWAY", /^android line "home": unreachable \(/);
    expect(fake.message(id)).toBeUndefined();
    await fake.setPhone(true);
    expect(await driver.send({ id, phone: newPhone(), text: "Anyone there?" })).toEqual({ networkId: id, status: "sent" });
  });

  test("wrong credentials on a send: BAD_GATEWAY saying so", async () => {
    await failsWith(driverFor(fake, { password: "nope" }).send({ id: Bun.randomUUIDv7(), phone: newPhone(), text: "x" }), "BAD_GATEWAY", 'android line "home": the gateway refused the username or password (401)');
  });

  test("reconcile: the gateway's state of a message whose send timed out; one it never got is failed after the timeout", async () => {
    const id = Bun.randomUUIDv7();
    await driver.send({ id, phone: newPhone(), text: "Where is it?" });
    const pending = (over: Partial<{ id: string; createdAt: number }>) => ({ id, phone: "+14155550000", text: "", networkId: null, status: "queued" as const, createdAt: Date.now(), chatNetworkId: null, ...over });
    expect(await driver.reconcile!([pending({})])).toEqual([]);
    fake.report(id, ["Processed", "Sent"]);
    expect(await driver.reconcile!([pending({})])).toEqual([{ messageId: id, networkId: id, networkStatus: "Sent", status: "sent" }]);
    const lost = Bun.randomUUIDv7();
    expect(await driver.reconcile!([pending({ id: lost })])).toEqual([]);
    expect(await driver.reconcile!([pending({ id: lost, createdAt: Date.now() - 60_000 })])).toEqual([
      { messageId: lost, networkStatus: "not found", status: "failed", error: 'android line "home": the gateway never got the message' },
    ]);
  });
});

describe("cloud or private server: /3rdparty/v1 with a device", () => {
  let fake: FakeAndroid;
  let driver: AndroidNetwork;
  const publicHook = `${PUBLIC_URL}/webhooks/lines/ln_cloud`;

  beforeAll(async () => {
    fake = startFakeAndroid({ mode: "cloud", devices: [nanoid(), nanoid()] });
    driver = current = driverFor(fake, { deviceId: fake.deviceId, webhookUrl: publicHook, webhookIdPrefix: "ln_cloud" });
  });
  afterEach(async () => {
    current = driver;
    fake.queueFull = null;
    await fake.setPhone(true);
    await fake.idle();
  });
  afterAll(async () => {
    await fake?.stop();
  });

  test("the url's path ends in /3rdparty/v1", () => {
    expect(fake.url.endsWith("/3rdparty/v1")).toBe(true);
    expect(isCloudUrl(fake.url)).toBe(true);
  });

  test("a send names the device; the same id on the account's other device is another message (ids are per device)", async () => {
    const id = Bun.randomUUIDv7();
    const phone = newPhone();
    expect(await driver.send({ id, phone, text: "From the cloud" })).toEqual({ networkId: id, status: "sent" });
    const req = fake.requests.filter((r) => r.method === "POST" && r.path === "/3rdparty/v1/messages").at(-1)!;
    expect(req.body).toEqual({ id, textMessage: { text: "From the cloud" }, phoneNumbers: [phone], withDeliveryReport: true, deviceId: fake.deviceId });
    expect(await driver.send({ id, phone, text: "From the cloud" })).toEqual({ networkId: id, status: "sent" });
    expect(fake.messages.filter((m) => m.id === id)).toHaveLength(1);
    const otherDevice = driverFor(fake, { deviceId: fake.devices[1]! });
    await otherDevice.send({ id, phone, text: "From the cloud" });
    expect(fake.messages.filter((m) => m.id === id).map((m) => m.deviceId)).toEqual(fake.devices.slice(0, 2));
  });

  test("the queue full: 503 is TOO_MANY_REQUESTS with Retry-After (the limiter's 60 s when the server gives none)", async () => {
    fake.queueFull = "too many pending messages: 100 / 100";
    const err = await failsWith(driver.send({ id: Bun.randomUUIDv7(), phone: newPhone(), text: "Busy" }), "TOO_MANY_REQUESTS", `android line "home": the gateway's queue is full (failed to enqueue message: queue limits exceeded: too many pending messages: 100 / 100)`);
    expect(err.headers).toEqual({ "Retry-After": "60" });
  });

  test("a number the server cannot use is BAD_REQUEST with its reason", async () => {
    await failsWith(driver.send({ id: Bun.randomUUIDv7(), phone: "+1 415 555", text: "x" }), "BAD_REQUEST", /^android line "home": failed to enqueue message: failed to use phone in row 1/);
  });

  test("webhooks: the server takes only https (Textwire's PUBLIC_URL), per device; the phone posts them through the proxy, signed", async () => {
    await failsWith(driverFor(fake, { deviceId: fake.deviceId, webhookIdPrefix: "ln_plain" }).register(), "BAD_GATEWAY", /registering the sms:received webhook failed: failed to validate: validation failed: url must start with https:\/\//);
    const proxied = startFakeAndroid({ mode: "cloud", proxy: { publicUrl: PUBLIC_URL, to: `http://127.0.0.1:${receiver.port}` }, auto: true });
    try {
      const line = (current = driverFor(proxied, { deviceId: proxied.deviceId, webhookUrl: publicHook, webhookIdPrefix: "ln_cloud" }));
      await line.register();
      await line.register();
      expect(proxied.webhooks.map((w) => [w.id, w.deviceId, w.url])).toEqual(
        ["received", "sent", "delivered", "failed"].map((e) => [`ln_cloud-${e}`, proxied.deviceId, publicHook]),
      );
      const id = Bun.randomUUIDv7();
      await line.send({ id, phone: newPhone(), text: "Through the cloud" });
      await proxied.waitForDelivered(2);
      expect(proxied.deliveries.map((d) => [d.url, d.target])).toEqual([
        [publicHook, receiverUrl().replace("ln_test", "ln_cloud")],
        [publicHook, receiverUrl().replace("ln_test", "ln_cloud")],
      ]);
      expect(settle("sent", statuses())).toBe("delivered");
      await line.unregister();
      expect(proxied.webhooks).toEqual([]);
    } finally {
      await proxied.stop();
    }
  });

  test("the phone off in cloud mode: the server takes the send; the reports come once the phone is back", async () => {
    const proxied = startFakeAndroid({ mode: "cloud", proxy: { publicUrl: PUBLIC_URL, to: `http://127.0.0.1:${receiver.port}` }, auto: true });
    try {
      const line = (current = driverFor(proxied, { deviceId: proxied.deviceId, webhookUrl: publicHook, webhookIdPrefix: "ln_off" }));
      await line.register();
      await proxied.setPhone(false);
      const id = Bun.randomUUIDv7();
      expect(await line.send({ id, phone: newPhone(), text: "Later" })).toEqual({ networkId: id, status: "sent" });
      await Bun.sleep(50);
      expect(proxied.deliveries).toEqual([]);
      expect(proxied.message(id)!.state).toBe("Pending");
      await proxied.setPhone(true);
      await proxied.waitForDelivered(2);
      expect(statuses().map((s) => s.networkStatus)).toEqual(["Sent", "Delivered"]);
    } finally {
      await proxied.stop();
    }
  });

  test("check(): the account's devices must list the line's device", async () => {
    const ok = await driver.check();
    expect(ok.ok).toBe(true);
    expect(ok.detail).toStartWith(`android line "home": device ${fake.deviceId} (Google/Pixel 7), last seen `);
    expect(fake.requests.at(-1)!.path).toBe("/3rdparty/v1/devices");
    const missing = await driverFor(fake, { deviceId: "ZZZZZZZZZZZZZZZZZZZZZ" }).check();
    expect(missing).toEqual({ ok: false, detail: `settings.device_id: ZZZZZZZZZZZZZZZZZZZZZ is not among the account's devices (${fake.devices.join(", ")})` });
    expect(await driverFor(fake, { deviceId: fake.deviceId, password: "x" }).check()).toEqual({ ok: false, detail: 'android line "home": the gateway refused the username or password (401)' });
  });
});

describe("the line's settings and credentials", () => {
  const issues = (r: { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } }) => (r.success ? [] : fieldIssues(r.error!.issues));

  test("local settings: url and username; device and SIM optional", () => {
    expect(androidSettingsSchema.parse({ url: "https://phone.example.com", username: "sms" })).toEqual({ url: "https://phone.example.com", username: "sms" });
    expect(androidSettingsSchema.parse({ url: "http://192.168.1.20:8080", username: "sms", sim_number: 2, send_timeout_ms: 1000 })).toMatchObject({ sim_number: 2, send_timeout_ms: 1000 });
  });

  test("cloud or private server: device_id is required, named", () => {
    const r = androidSettingsSchema.safeParse({ url: "https://api.sms-gate.app/3rdparty/v1/", username: "ABCDEF" });
    expect(issues(r)).toEqual([{ path: "device_id", message: expect.stringMatching(/^required when url is the cloud or a private server/) }]);
    expect(androidSettingsProblem({ url: "https://sms.example.org/api/3rdparty/v1" })).toMatch(/^settings\.device_id: required when url is the cloud or a private server/);
    expect(androidSettingsProblem({ url: "https://sms.example.org/api/3rdparty/v1", device_id: "PyDmBQZZXYmyxMwED8Fzy" })).toBeUndefined();
    expect(androidSettingsProblem({ url: "http://192.168.1.20:8080" })).toBeUndefined();
  });

  test("an unknown field, a SIM outside 1-3, a short timeout, a bad URL: refused, each named", () => {
    expect(issues(androidSettingsSchema.safeParse({ url: "https://p.example.com", username: "u", service: "SMS" }))[0]!.message).toMatch(/service/);
    expect(issues(androidSettingsSchema.safeParse({ url: "https://p.example.com", username: "u", sim_number: 4 }))).toEqual([{ path: "sim_number", message: "must be from 1 to 3" }]);
    expect(issues(androidSettingsSchema.safeParse({ url: "https://p.example.com", username: "u", send_timeout_ms: 999 }))).toEqual([{ path: "send_timeout_ms", message: "must be at least 1000" }]);
    expect(issues(androidSettingsSchema.safeParse({ url: "ftp://p.example.com", username: "u" })).map((i) => i.path)).toEqual(["url"]);
    expect(issues(androidSettingsSchema.safeParse({ url: "https://p.example.com", username: "u", device_id: "x".repeat(22) }))).toEqual([{ path: "device_id", message: "must be at most 21 characters" }]);
  });

  test("credentials: password and signing key, both required, nothing else", () => {
    expect(androidCredentialsSchema.parse({ password: "p", signing_key: "k" })).toEqual({ password: "p", signing_key: "k" });
    expect(issues(androidCredentialsSchema.safeParse({ password: "p" })).map((i) => i.path)).toEqual(["signing_key"]);
    expect(issues(androidCredentialsSchema.safeParse({ password: "p", signing_key: "k", token: "t" })).length).toBe(1);
  });

  test("isCloudUrl: by the path's end only", () => {
    expect(isCloudUrl("https://api.sms-gate.app/3rdparty/v1")).toBe(true);
    expect(isCloudUrl("https://sms.example.org/3rdparty/v1/")).toBe(true);
    expect(isCloudUrl("http://192.168.1.20:8080")).toBe(false);
    expect(isCloudUrl("https://sms.example.org/3rdparty/v1/messages")).toBe(false);
    expect(isCloudUrl("not a url")).toBe(false);
  });
});

describe("the stand-in answers as the app and the server do", () => {
  let local: FakeAndroid;
  let cloud: FakeAndroid;
  beforeAll(() => {
    local = startFakeAndroid({ mode: "local" });
    cloud = startFakeAndroid({ mode: "cloud" });
  });
  afterAll(async () => {
    await local?.stop();
    await cloud?.stop();
  });
  const basic = (f: FakeAndroid) => ({ Authorization: `Basic ${Buffer.from(`${f.username}:${f.password}`).toString("base64")}`, "Content-Type": "application/json" });

  test("local: /health without auth, everything else behind Basic (ktor's 401 with WWW-Authenticate)", async () => {
    expect((await fetch(`${local.url}/health`)).status).toBe(200);
    const denied = await fetch(`${local.url}/device`);
    expect(denied.status).toBe(401);
    expect(denied.headers.get("www-authenticate")).toStartWith('Basic realm="Access to SMS Gateway"');
    const device = (await (await fetch(`${local.url}/device`, { headers: basic(local) })).json()) as { id: string }[];
    expect(device.map((d) => d.id)).toEqual([local.deviceId]);
  });

  test("local: 409 for an id it has, 400 for another device's id, the old /message path too", async () => {
    const body = { id: "abc", textMessage: { text: "hi" }, phoneNumbers: ["+14155550101"] };
    const first = await fetch(`${local.url}/message`, { method: "POST", headers: basic(local), body: JSON.stringify(body) });
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ id: "abc", deviceId: local.deviceId, state: "Pending", recipients: [{ phoneNumber: "+14155550101", state: "Pending" }] });
    const again = await fetch(`${local.url}/messages`, { method: "POST", headers: basic(local), body: JSON.stringify(body) });
    expect([again.status, await again.json()]).toEqual([409, { message: "Message with the same ID already exists" }]);
    const other = await fetch(`${local.url}/messages`, { method: "POST", headers: basic(local), body: JSON.stringify({ ...body, id: "abd", deviceId: "other" }) });
    expect([other.status, await other.json()]).toEqual([400, { message: "Invalid device ID" }]);
  });

  test("cloud: ids over 36 characters refused, the inbox 501, webhooks with an unknown event refused", async () => {
    const long = await fetch(`${cloud.url}/messages`, { method: "POST", headers: basic(cloud), body: JSON.stringify({ id: "x".repeat(37), textMessage: { text: "hi" }, phoneNumbers: ["+14155550101"] }) });
    expect(long.status).toBe(400);
    expect((await fetch(`${cloud.url}/inbox`, { headers: basic(cloud) })).status).toBe(501);
    const hook = await fetch(`${cloud.url}/webhooks`, { method: "POST", headers: basic(cloud), body: JSON.stringify({ url: "https://x.example.com", event: "sms:nope" }) });
    expect([hook.status, await hook.json()]).toEqual([400, { message: "failed to validate: validation failed: invalid event type" }]);
    expect((await fetch(`${cloud.url}/devices`)).status).toBe(401);
  });
});
