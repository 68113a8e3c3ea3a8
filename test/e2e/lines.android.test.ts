// Android lines (docs/networks.md "Android", docs/lines.md) end to end: the real server with an
// `android` line talking to the stand-in SMS Gateway for Android (test/support/fake-android.ts,
// written from the app's and the cloud server's source), in local mode and in cloud mode.
// The gateway posts its webhooks to https://PUBLIC_URL/webhooks/lines/<id>; the stand-in's TLS
// proxy turns that into the real server's address. Proved in each mode:
// - a line is added and tested, its four webhooks registered once (fixed ids: testing again
//   replaces; deleting a line removes its own and no other's);
// - a send reaches the phone with our message id as the gateway's `id`, and is `delivered`
//   after the phone's reports in any order;
// - a send whose answer came too late (504) reaches the phone once: neither the retry with the
//   same Idempotency-Key nor the reconciliation sends it again;
// - an inbound text is stored on the line once (the phone's retry too), polled, and answered by
//   the shipped autoresponder (a fake OpenAI writes the reply) back through the android line;
// - a forged, stale or unsigned webhook is 401 and changes nothing;
// - local: a phone that is off is 502 naming the line, the message `failed` with that error;
//   cloud: the queue's 503 is 429 with Retry-After, `device_id` is required, and a phone that
//   was off posts what it owed when it is back (the catch-up);
// and in any mode, an android line without an https PUBLIC_URL is 422.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { resolve } from "node:path";
import { nanoid, postAndroidWebhook, startFakeAndroid, type FakeAndroid } from "../support/fake-android";
import { startFakeOpenAI } from "../support/fake-openai";
import { call, expectError, history, newPhone, poll, type MessageRecord } from "./api";
import { fileServers, ROOT, waitFor, type Server } from "./harness";

// Each describe starts a server; the bound that matters is each wait inside.
setDefaultTimeout(60_000);

const PUBLIC_URL = "https://textwire.example.test";
const SHIPPED_WORKFLOWS = resolve(ROOT, "workflows");
const OWN_NUMBER = "+14155550100";
const REPLY_TEXT = "Yes, we are open until six.";
/** The line's own send timeout: the smallest a line takes, so the slow-answer test stays short. */
const SEND_TIMEOUT_MS = 1000;
const EVENTS = ["sms:delivered", "sms:failed", "sms:received", "sms:sent"];

const { boot } = fileServers();
const openai = startFakeOpenAI({ kind: "text", text: REPLY_TEXT });
const fakes: FakeAndroid[] = [];
afterAll(async () => {
  for (const f of fakes) await f.stop();
  await openai.stop();
}, 30_000);

interface LineRecord {
  id: string;
  name: string;
  network: string;
  address: string | null;
  settings: Record<string, unknown>;
  webhook_url: string | null;
  capabilities: Record<string, boolean>;
}
type Stored = MessageRecord & { line_id: string };

async function messagesOf(server: Server, phone: string): Promise<Stored[]> {
  return (await history(server, phone, "limit=100")).messages as Stored[];
}

async function statusOf(server: Server, phone: string, id: string): Promise<string | undefined> {
  return (await messagesOf(server, phone)).find((m) => m.id === id)?.status;
}

describe.each(["local", "cloud"] as const)("an android line, %s mode", (mode) => {
  let server: Server;
  let fake: FakeAndroid;
  let line: LineRecord;
  const output = () => `--- server stdout ---\n${server.stdout.slice(-4000)}\n--- stderr ---\n${server.stderr.slice(-2000)}`;

  const settings = (extra: Record<string, unknown> = {}) => ({
    url: fake.url,
    username: fake.username,
    ...(mode === "cloud" ? { device_id: fake.deviceId } : {}),
    send_timeout_ms: SEND_TIMEOUT_MS,
    ...extra,
  });
  const credentials = () => ({ password: fake.password, signing_key: fake.signingKey });
  const addLine = (name: string, extra: Record<string, unknown> = {}) =>
    call<{ success: boolean; line: LineRecord }>(server, "POST", "/api/lines", {
      body: { name, network: "android", address: OWN_NUMBER, settings: settings(extra), credentials: credentials() },
    });
  /** Our webhooks as the gateway has them now, for the line's URL. */
  const hooksOf = (l: LineRecord) => fake.webhooks.filter((w) => w.url === l.webhook_url);
  /** The refused attempt of the first test: its first POST /webhooks was refused (401). */
  const refusedRegistrations = 1;
  const registrations = () => fake.requests.filter((r) => r.method === "POST" && /\/webhooks$/.test(r.path)).length;
  const sendsOf = (id: string) => fake.requests.filter((r) => r.method === "POST" && /\/messages$/.test(r.path) && (r.body as { id?: string }).id === id);
  const sendOnLine = (phone: string, message: string, headers: Record<string, string> = {}) =>
    call<{ success: boolean; message_id: string; status: string }>(server, "POST", "/api/send", { body: { phone, message, line: "phone" }, headers });

  beforeAll(async () => {
    server = await boot({
      env: {
        PUBLIC_URL,
        WORKFLOWS_DIR: SHIPPED_WORKFLOWS,
        OPENAI_API_KEY: "any",
        OPENAI_BASE_URL: openai.baseUrl,
        // Queued sends are asked about a second after their last change (the reconciliation test).
        BLUEBUBBLES_RECONCILE_AFTER_MS: "1000",
      },
    });
    // Cloud: the account has a second phone, which a send without our device could go out from.
    fake = startFakeAndroid({
      mode,
      ownNumber: OWN_NUMBER,
      ...(mode === "cloud" ? { devices: [nanoid(), nanoid()] } : {}),
      proxy: { publicUrl: PUBLIC_URL, to: server.url },
    });
    fakes.push(fake);
  });

  test("a line whose password the gateway refuses is 502 naming the line, and nothing is stored", async () => {
    const reply = await call(server, "POST", "/api/lines", {
      body: { name: "phone", network: "android", address: OWN_NUMBER, settings: settings(), credentials: { ...credentials(), password: "not-the-password" } },
    });
    const body = expectError(reply, 502, "BAD_GATEWAY", [fake.signingKey]);
    expect(body.error.message).toContain("line phone");
    expect(body.error.message).toContain("password");
    expect((await call<{ lines: LineRecord[] }>(server, "GET", "/api/lines")).body.lines.map((l) => l.name)).toEqual(["default"]);
    expect(fake.webhooks).toEqual([]);
  });

  test("POST /api/lines adds the line (201), credentials never shown, and registers its four webhooks, each once", async () => {
    const reply = await addLine("phone");
    expect(reply.status).toBe(201);
    line = reply.body.line;
    expect(line).toMatchObject({ name: "phone", network: "android", address: OWN_NUMBER, webhook_url: `${PUBLIC_URL}/webhooks/lines/${line.id}` });
    expect(line.settings).toEqual(settings());
    expect(reply.text).not.toContain(fake.password);
    expect(reply.text).not.toContain(fake.signingKey);
    // SMS text only (docs/networks.md).
    expect(Object.values(line.capabilities).every((v) => v === false)).toBe(true);

    const hooks = hooksOf(line);
    expect(hooks.map((h) => h.event).sort()).toEqual(EVENTS);
    expect(new Set(hooks.map((h) => h.id)).size).toBe(4);
    expect(fake.webhooks).toHaveLength(4);
    // Cloud: registered for our phone only, so the account's other phone posts nothing here.
    if (mode === "cloud") expect(hooks.every((h) => h.deviceId === fake.deviceId)).toBe(true);
    expect(registrations()).toBe(4 + refusedRegistrations);
    expect((await call<{ lines: LineRecord[] }>(server, "GET", "/api/lines")).body.lines.map((l) => l.name)).toContain("phone");
  });

  test("POST /api/lines/:id/test is ok through an authenticated call, and registering again replaces the four webhooks (same ids), never adds", async () => {
    const ids = hooksOf(line).map((h) => h.id).sort();
    for (let round = 1; round <= 2; round++) {
      const reply = await call<{ success: boolean; ok: boolean; detail: string }>(server, "POST", `/api/lines/${line.id}/test`);
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({ success: true, ok: true });
      expect(reply.body.detail).toContain(fake.deviceId);
      expect(hooksOf(line).map((h) => h.id).sort()).toEqual(ids);
      expect(fake.webhooks).toHaveLength(4);
      expect(registrations()).toBe(4 + refusedRegistrations + 4 * round);
    }
    // The check was authenticated: the device route (local) or the devices list (cloud), never /health alone.
    const checks = fake.requests.filter((r) => r.method === "GET" && /\/devices?$/.test(r.path));
    expect(checks.length).toBe(2);
    expect(checks.every((r) => r.headers.authorization === `Basic ${Buffer.from(`${fake.username}:${fake.password}`).toString("base64")}`)).toBe(true);
  });

  test("deleting a line removes its own four webhooks and leaves the other line's", async () => {
    const spare = (await addLine("spare")).body.line;
    expect(hooksOf(spare)).toHaveLength(4);
    expect(fake.webhooks).toHaveLength(8);
    expect(new Set(fake.webhooks.map((w) => w.id)).size).toBe(8);
    const deleted = await call(server, "DELETE", `/api/lines/${spare.id}`);
    expect(deleted.status).toBe(200);
    expect(hooksOf(spare)).toEqual([]);
    expect(hooksOf(line).map((h) => h.event).sort()).toEqual(EVENTS);
    expect(fake.webhooks).toHaveLength(4);
    expect((await call(server, "GET", `/api/lines/${spare.id}`)).status).toBe(404);
  });

  test("a send reaches the phone with our message id as the gateway's id, and is delivered after Processed, Sent, Delivered", async () => {
    const phone = newPhone();
    const reply = await sendOnLine(phone, "Your table is ready — 🍽️");
    expect(reply.status).toBe(200);
    const id = reply.body.message_id;
    expect(reply.body.status).toBe("sent");
    const sends = sendsOf(id);
    expect(sends).toHaveLength(1);
    expect(sends[0]!.body).toEqual({
      id,
      textMessage: { text: "Your table is ready — 🍽️" },
      phoneNumbers: [phone],
      withDeliveryReport: true,
      ...(mode === "cloud" ? { deviceId: fake.deviceId } : {}),
    });
    expect(fake.message(id)).toMatchObject({ deviceId: fake.deviceId, phoneNumbers: [phone], state: "Pending" });
    const [stored] = await messagesOf(server, phone);
    expect(stored).toMatchObject({ id, direction: "outbound", status: "sent", line_id: line.id });

    fake.report(id, ["Processed", "Sent", "Delivered"]);
    await waitFor("delivered", 10_000, async () => (await statusOf(server, phone, id)) === "delivered", output);
  });

  test("the phone's reports in another order: Delivered before Sent leaves it delivered; a late Failed does not undo it", async () => {
    const phone = newPhone();
    const id = (await sendOnLine(phone, "out of order")).body.message_id;
    const before = fake.deliveries.filter((d) => d.status === 204).length;
    fake.report(id, ["Delivered"]);
    await waitFor("delivered", 10_000, async () => (await statusOf(server, phone, id)) === "delivered", output);
    fake.report(id, ["Sent", "Failed"], { reason: "late" });
    // Both later events were taken (204) and changed nothing: delivered is final.
    await fake.waitForDelivered(before + 3);
    await fake.idle();
    expect(await statusOf(server, phone, id)).toBe("delivered");
  });

  test("a send answered too late is 504; the retry with the same Idempotency-Key and the reconciliation never put a second message on the phone", async () => {
    const phone = newPhone();
    const key = `retry-${nanoid()}`;
    fake.answerDelayMs = SEND_TIMEOUT_MS + 700;
    let id: string;
    try {
      const first = await sendOnLine(phone, "sent once", { "Idempotency-Key": key });
      const body = expectError(first, 504, "GATEWAY_TIMEOUT") as unknown as { error: { message_id: string } };
      id = body.error.message_id;
      expect(fake.message(id)).toBeDefined();
      const again = await sendOnLine(phone, "sent once", { "Idempotency-Key": key });
      const second = expectError(again, 504, "GATEWAY_TIMEOUT") as unknown as { error: { message_id: string } };
      expect(second.error.message_id).toBe(id);
    } finally {
      fake.answerDelayMs = 0;
    }
    expect(await messagesOf(server, phone)).toEqual([expect.objectContaining({ id, status: "queued" })]);

    // The phone sent it but its report was lost: the reconciliation asks the gateway by our id.
    fake.message(id)!.state = "Sent";
    await waitFor("the reconciliation to settle the message", 10_000, async () => (await statusOf(server, phone, id)) === "sent", output);
    expect(fake.requests.some((r) => r.method === "GET" && r.path.endsWith(`/messages/${id}`))).toBe(true);
    fake.report(id, ["Delivered"]);
    await waitFor("delivered", 10_000, async () => (await statusOf(server, phone, id)) === "delivered", output);

    const replay = await sendOnLine(phone, "sent once", { "Idempotency-Key": key });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ message_id: id, status: "delivered" });
    expect(sendsOf(id)).toHaveLength(1);
    expect(fake.messages.filter((m) => m.phoneNumbers.includes(phone))).toHaveLength(1);
    expect(await messagesOf(server, phone)).toHaveLength(1);
  });

  test("an inbound text is stored on the line once (the phone's retry too), polled, and answered by the autoresponder through the android line", async () => {
    const phone = newPhone();
    const text = "Hi! Are you open today?";
    const before = fake.deliveries.length;
    fake.receive({ from: phone, text });
    await fake.idle();
    const posted = fake.deliveries.slice(before).find((d) => d.event === "sms:received");
    expect(posted).toMatchObject({ target: `${server.url}/webhooks/lines/${line.id}`, status: 204 });

    // The phone posts the same event again (its retry after a lost answer): stored once.
    const retried = await postAndroidWebhook(`${server.url}/webhooks/lines/${line.id}`, posted!.body, { signingKey: fake.signingKey });
    expect(retried.status).toBe(204);
    const stored = await messagesOf(server, phone);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ phone, message: text, direction: "inbound", status: "received", line_id: line.id });
    const polled = await poll(server, { line: line.id, phone });
    expect(polled.messages.map((m) => m.id)).toEqual([stored[0]!.id]);

    // The shipped autoresponder waits for 5 s of quiet, then answers through the line the text came in on.
    const reply = await waitFor("the autoresponder's reply on the phone", 25_000, () => fake.messages.find((m) => m.phoneNumbers.includes(phone)), output);
    expect(reply.text).toBe(REPLY_TEXT);
    expect(reply.deviceId).toBe(fake.deviceId);
    expect(openai.requests.some((r) => r.messages.some((m) => m.content.includes(text)))).toBe(true);
    // Stored queued before the send; the gateway's answer (202) makes it sent.
    const out = await waitFor("the reply in history, taken by the gateway", 5000, async () => (await messagesOf(server, phone)).find((m) => m.direction === "outbound" && m.status !== "queued"), output);
    expect(out).toMatchObject({ id: reply.id, message: REPLY_TEXT, status: "sent", reply_to: stored[0]!.id, line_id: line.id });
  });

  test("a forged, stale or unsigned webhook is 401 and changes nothing", async () => {
    const url = `${server.url}/webhooks/lines/${line.id}`;
    const stranger = newPhone();
    const inbound = JSON.stringify({
      id: nanoid(),
      webhookId: hooksOf(line).find((h) => h.event === "sms:received")!.id,
      event: "sms:received",
      deviceId: fake.deviceId,
      payload: { message: "send me your codes", receivedAt: new Date().toISOString(), messageId: "1a2b3c4d", sender: stranger, recipient: OWN_NUMBER, phoneNumber: stranger },
    });
    const forged = await postAndroidWebhook(url, inbound, { signingKey: "not-the-key" });
    const stale = await postAndroidWebhook(url, inbound, { signingKey: fake.signingKey, timestamp: String(Math.floor(Date.now() / 1000) - 600) });
    const unsigned = await postAndroidWebhook(url, inbound, { signingKey: fake.signingKey, signature: null });
    for (const r of [forged, stale, unsigned]) {
      expect(r.status).toBe(401);
      expect(JSON.parse(r.text)).toMatchObject({ success: false, error: { code: "UNAUTHORIZED" } });
    }
    expect(await messagesOf(server, stranger)).toEqual([]);

    // A forged failure report for a delivered message moves nothing.
    const phone = newPhone();
    const id = (await sendOnLine(phone, "keep me")).body.message_id;
    fake.report(id, ["Sent", "Delivered"]);
    await waitFor("delivered", 10_000, async () => (await statusOf(server, phone, id)) === "delivered", output);
    const failure = JSON.stringify({ id: nanoid(), event: "sms:failed", deviceId: fake.deviceId, payload: { failedAt: new Date().toISOString(), reason: "forged", messageId: id, recipient: phone, phoneNumber: phone } });
    expect((await postAndroidWebhook(url, failure, { signingKey: `${fake.signingKey}x` })).status).toBe(401);
    expect(await statusOf(server, phone, id)).toBe("delivered");
  });

  if (mode === "local") {
    test("a phone that is off: the send is 502 naming the line, the message failed with that error; the line's test says so", async () => {
      const phone = newPhone();
      await fake.setPhone(false);
      try {
        const reply = await sendOnLine(phone, "anyone there?");
        const body = expectError(reply, 502, "BAD_GATEWAY");
        expect(body.error.message).toBe("line phone: android: unreachable (the connection was refused)");
        const [stored] = await messagesOf(server, phone);
        expect(stored).toMatchObject({ direction: "outbound", status: "failed", error: body.error.message });
        const check = await call<{ ok: boolean; detail: string }>(server, "POST", `/api/lines/${line.id}/test`);
        expect(check.status).toBe(200);
        expect(check.body.ok).toBe(false);
        expect(check.body.detail).toContain("unreachable");
      } finally {
        await fake.setPhone(true);
      }
      expect(fake.messages.some((m) => m.phoneNumbers.includes(phone))).toBe(false);
    });
  }

  if (mode === "cloud") {
    test("the cloud's 503 (queue full) is 429 TOO_MANY_REQUESTS with Retry-After, the message failed", async () => {
      const phone = newPhone();
      fake.queueFull = "too many messages for device";
      try {
        const reply = await sendOnLine(phone, "busy?");
        const body = expectError(reply, 429, "TOO_MANY_REQUESTS");
        expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(body.error.message).toContain("queue");
        expect(await messagesOf(server, phone)).toEqual([expect.objectContaining({ status: "failed" })]);
      } finally {
        fake.queueFull = null;
      }
    });

    test("a phone that is off: the cloud takes the send, and the phone posts its reports when it is back (the catch-up)", async () => {
      const phone = newPhone();
      await fake.setPhone(false);
      let id: string;
      try {
        const reply = await sendOnLine(phone, "while you were away");
        expect(reply.status).toBe(200);
        id = reply.body.message_id;
        fake.report(id, ["Sent", "Delivered"]);
        await Bun.sleep(200);
        expect(await statusOf(server, phone, id)).toBe("sent");
      } finally {
        await fake.setPhone(true);
      }
      await waitFor("delivered once the phone is back", 10_000, async () => (await statusOf(server, phone, id)) === "delivered", output);
    });

    test("cloud mode without device_id is 400 naming settings.device_id", async () => {
      const reply = await call(server, "POST", "/api/lines", {
        body: { name: "nodevice", network: "android", address: OWN_NUMBER, settings: { url: fake.url, username: fake.username }, credentials: credentials() },
      });
      const body = expectError(reply, 400, "BAD_REQUEST", [fake.password, fake.signingKey]);
      expect(body.error.message).toContain("settings.device_id");
      expect(fake.webhooks).toHaveLength(4);
    });
  }
});

describe("a deployment without an https PUBLIC_URL", () => {
  test("an android line is 422 naming PUBLIC_URL, whether it is unset or http", async () => {
    const fake = startFakeAndroid();
    fakes.push(fake);
    const servers = await Promise.all([boot(), boot({ env: { PUBLIC_URL: "http://textwire.example.test" } })]);
    for (const server of servers) {
      const reply = await call(server, "POST", "/api/lines", {
        body: { name: "phone", network: "android", settings: { url: fake.url, username: fake.username }, credentials: { password: fake.password, signing_key: fake.signingKey } },
      });
      const body = expectError(reply, 422, "UNPROCESSABLE_CONTENT");
      expect(body.error.message).toContain("PUBLIC_URL");
      expect(body.error.message).toContain("https");
      expect((await call<{ lines: LineRecord[] }>(server, "GET", "/api/lines")).body.lines.map((l) => l.network)).toEqual(["loopback"]);
    }
    expect(fake.requests).toEqual([]);
  });
});
