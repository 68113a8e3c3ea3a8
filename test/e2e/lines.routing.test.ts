// Issue 31's acceptance scenario (docs/lines.md): two API processes and a worker on one
// database (a SQLite file, or PostgreSQL in the PostgreSQL pass), three lines added through
// the API as a deployment would: an iMessage line on a BlueBubbles server (the fake, Private
// API on), the main Twilio number (the default) and a sales Twilio number, each on a fake
// Twilio account of its own. The environment's line is the loopback one (NETWORK unset).
// - a new iPhone contact is reached over iMessage, a new Android contact by SMS on the default;
// - each keeps its line afterwards (sticky), whichever process sends, and whatever other
//   contacts do on other lines; a reply goes out on the line of what it answers;
// - a line added through one process is used by the other within 5 s;
// - an iMessage line whose server refuses connections falls back once to its fallback
//   (`message.rerouted`, reason `unreachable`); a phone known not to have iMessage goes to
//   the fallback before anything is sent (`not_on_imessage`); a timeout is never rerouted.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { call, history, newPhone, type MessageRecord } from "./api";
import { newApiKey, spawnServer, startServer, testDatabase, waitFor, type Server, type Spawned, type TestDatabase } from "./harness";
import { startFakeBlueBubbles, type FakeBlueBubbles } from "../support/fake-bluebubbles";
import { TEST_PUBLIC_URL, postTwilioWebhook, signTwilioRequest, startFakeTwilio, twilioInboundParams, type FakeTwilio } from "../support/fake-twilio";

setDefaultTimeout(30_000);

const MAIN_FROM = "+14155550101";
const SALES_FROM = "+14155550102";
const BB_SECRET = randomBytes(24).toString("base64url");

interface LineRecord {
  id: string;
  name: string;
  settings: Record<string, unknown>;
  default: boolean;
}
type Record_ = MessageRecord & { line_id: string };
interface EventRecord {
  type: string;
  data: Record_ & { from_line: string; to_line: string; reason: string };
}

let bb: FakeBlueBubbles;
let mainTw: FakeTwilio;
let salesTw: FakeTwilio;
let db: TestDatabase;
let a: Server;
let b: Server;
let worker: Spawned;
const lines: Record<string, LineRecord> = {};

/** Every process's output tail, for a failure's message. */
const output = () =>
  [
    ["api a", a],
    ["api b", b],
    ["worker", worker],
  ]
    .map(([name, p]) => `--- ${name} ---\n${(p as Spawned | undefined)?.stdout.slice(-2500) ?? ""}${(p as Spawned | undefined)?.stderr.slice(-500) ?? ""}`)
    .join("\n");

beforeAll(async () => {
  bb = startFakeBlueBubbles({ privateApi: true });
  mainTw = startFakeTwilio();
  salesTw = startFakeTwilio();
  db = await testDatabase();
  const apiKey = newApiKey();
  const env = { PUBLIC_URL: TEST_PUBLIC_URL, NETWORK: undefined };
  a = await startServer({ db, apiKey, mode: "api", env });
  [b, worker] = await Promise.all([startServer({ db, apiKey, mode: "api", env }), spawnServer({ db, apiKey, mode: "worker", env })]);
  await waitFor("the worker to send scheduled messages", 15_000, () => worker.stdout.includes("sending scheduled messages"), output);
}, 60_000);

afterAll(async () => {
  for (const p of [a, b, worker]) p?.kill();
  await Promise.all([bb?.stop(), mainTw?.stop(), salesTw?.stop()]);
  await db?.cleanup();
}, 60_000);

const twilioLine = (name: string, fake: FakeTwilio, address: string, extra: Record<string, unknown> = {}) => ({
  name,
  network: "twilio",
  address,
  settings: { account_sid: fake.accountSid, api_url: fake.url },
  credentials: { auth_token: fake.authToken },
  ...extra,
});

async function addLine(on: Server, body: Record<string, unknown>): Promise<LineRecord> {
  const res = await call<{ line: LineRecord }>(on, "POST", "/api/lines", { body });
  if (res.status !== 201) throw new Error(`add line ${String(body.name)}: ${res.status} ${res.text}`);
  lines[res.body.line.name] = res.body.line;
  return res.body.line;
}

async function patchLine(on: Server, ref: string, body: Record<string, unknown>): Promise<LineRecord> {
  const res = await call<{ line: LineRecord }>(on, "PATCH", `/api/lines/${ref}`, { body });
  if (res.status !== 200) throw new Error(`update line ${ref}: ${res.status} ${res.text}`);
  return res.body.line;
}

/** Waits (at most 5 s, the contract's bound) until `on` lists a line as `check` wants it. */
async function seenBy(on: Server, what: string, check: (lines: LineRecord[]) => boolean): Promise<void> {
  await waitFor(what, 5_000, async () => check((await call<{ lines: LineRecord[] }>(on, "GET", "/api/lines")).body.lines), output);
}

async function sendVia(on: Server, body: Record<string, unknown>): Promise<Record_> {
  const res = await call<{ message_id: string }>(on, "POST", "/api/send", { body });
  if (res.status !== 200) throw new Error(`send to ${String(body.phone)}: ${res.status} ${res.text}\n${output()}`);
  return recordOf(String(body.phone), res.body.message_id);
}

async function recordOf(phone: string, id: string, on = a): Promise<Record_> {
  const found = (await history(on, phone)).messages.find((m) => m.id === id) as Record_ | undefined;
  if (!found) throw new Error(`no message ${id} for ${phone}`);
  return found;
}

/** The Twilio numbers' requests to `phone`, and the BlueBubbles sends (chat/new or message/text) to it. */
const twilioTo = (fake: FakeTwilio, phone: string) => fake.sends.filter((r) => r.body.To === phone).map((r) => r.body.Body);
const imessageTo = (phone: string) => bb.sent.filter((m) => m.chats?.[0]?.chatIdentifier === phone).map((m) => m.text);

/** A contact texts one of our Twilio numbers, posted as Twilio would to that line's webhook. */
async function texts(fake: FakeTwilio, line: LineRecord, to: string, from: string, body: string): Promise<string> {
  const path = `/webhooks/lines/${line.id}`;
  const params = twilioInboundParams({ accountSid: fake.accountSid, from, to, body });
  const reply = await postTwilioWebhook(b.url, path, params, signTwilioRequest(fake.authToken, TEST_PUBLIC_URL + path, params));
  if (reply.status !== 200) throw new Error(`inbound on ${line.name}: ${reply.status} ${reply.text}`);
  const stored = (await history(a, from)).messages.find((m) => m.direction === "inbound" && m.message === body);
  return stored!.id;
}

async function rerouted(): Promise<EventRecord[]> {
  const res = await call<{ events: EventRecord[] }>(a, "GET", "/api/events?type=message.rerouted&limit=100");
  expect(res.status).toBe(200);
  return res.body.events;
}

const iphone = newPhone();
const android = newPhone();

describe("three lines, two API processes and a worker", () => {
  test("the iMessage line and the main Twilio number (default) are added through process A; B lists them within 5 s", async () => {
    await addLine(a, twilioLine("main", mainTw, MAIN_FROM, { default: true }));
    await addLine(a, {
      name: "iphone",
      network: "bluebubbles",
      address: "shop@icloud.example",
      settings: { url: bb.url },
      credentials: { password: bb.password, webhook_secret: BB_SECRET },
      fallback: "main",
    });
    await seenBy(b, "B to list main (default) and iphone", (l) => l.some((x) => x.name === "iphone") && l.find((x) => x.default)?.name === "main");
    bb.imessage.add(iphone);
  });

  test("a new iPhone contact is reached over iMessage, a new Android contact by SMS on the default line", async () => {
    const toIphone = await sendVia(b, { phone: iphone, message: "Hello iPhone" });
    expect(toIphone.line_id).toBe(lines.iphone!.id);
    expect(imessageTo(iphone)).toEqual(["Hello iPhone"]);
    expect(twilioTo(mainTw, iphone)).toEqual([]);
    // BlueBubbles was asked whether the phone has iMessage, as its handle router answers.
    expect(bb.requests.some((r) => r.path === "/api/v1/handle/availability/imessage" && r.query.address === iphone)).toBe(true);

    const toAndroid = await sendVia(a, { phone: android, message: "Hello Android" });
    expect(toAndroid.line_id).toBe(lines.main!.id);
    expect(twilioTo(mainTw, android)).toEqual(["Hello Android"]);
    expect(mainTw.sends.find((r) => r.body.To === android)!.body.From).toBe(MAIN_FROM);
    expect(imessageTo(android)).toEqual([]);
  });

  test("each keeps its line: second sends through the other process, and after other contacts write on other lines", async () => {
    expect((await sendVia(a, { phone: iphone, message: "Second to iPhone" })).line_id).toBe(lines.iphone!.id);
    expect((await sendVia(b, { phone: android, message: "Second to Android" })).line_id).toBe(lines.main!.id);
    // Someone else texts the main number; the Android contact answers on it (its own line).
    await texts(mainTw, lines.main!, MAIN_FROM, newPhone(), "someone else");
    await texts(mainTw, lines.main!, MAIN_FROM, android, "Android answers");
    expect((await sendVia(b, { phone: iphone, message: "Third to iPhone" })).line_id).toBe(lines.iphone!.id);
    expect((await sendVia(a, { phone: android, message: "Third to Android" })).line_id).toBe(lines.main!.id);
    expect(imessageTo(iphone)).toEqual(["Hello iPhone", "Second to iPhone", "Third to iPhone"]);
    expect(twilioTo(mainTw, android)).toEqual(["Hello Android", "Second to Android", "Third to Android"]);
    expect(twilioTo(mainTw, iphone)).toEqual([]);
  });

  test("the worker sends a scheduled message on the contact's line", async () => {
    const res = await call<{ message_id: string }>(a, "POST", "/api/send", { body: { phone: iphone, message: "Scheduled for iPhone", send_at: new Date(Date.now() + 1500).toISOString() } });
    expect(res.status).toBe(200);
    await waitFor("the worker to send the scheduled message over iMessage", 15_000, () => imessageTo(iphone).includes("Scheduled for iPhone"), output);
    expect((await recordOf(iphone, res.body.message_id)).line_id).toBe(lines.iphone!.id);
    expect(worker.stdout).not.toContain('"level":"error"');
  });

  test("a line added through process A is used by process B within 5 s", async () => {
    const phone = newPhone();
    const created = await addLine(a, twilioLine("sales", salesTw, SALES_FROM));
    const deadline = Date.now() + 5_000;
    let attempts = 0;
    let last = "";
    for (;;) {
      attempts++;
      const res = await call<{ message_id: string }>(b, "POST", "/api/send", { body: { phone, message: "from sales, through B", line: "sales" } });
      if (res.status === 200) break;
      // Until B reads the new line, it does not know the name: 400, and nothing is stored.
      expect(res.status).toBe(400);
      last = res.text;
      if (Date.now() > deadline) throw new Error(`B did not use the line within 5 s (${attempts} attempts): ${last}\n${output()}`);
      await Bun.sleep(50);
    }
    expect(twilioTo(salesTw, phone)).toEqual(["from sales, through B"]);
    const { messages } = await history(b, phone);
    expect(messages.map((m) => [m.message, (m as Record_).line_id])).toEqual([["from sales, through B", created.id]]);
  });

  test("a reply goes out on the line of what it answers, whatever the contact's last line", async () => {
    const phone = newPhone();
    const onSales = await texts(salesTw, lines.sales!, SALES_FROM, phone, "a question to sales");
    await texts(mainTw, lines.main!, MAIN_FROM, phone, "and one to the main number");
    const reply = await sendVia(a, { phone, message: "sales answers", reply_to: onSales });
    expect(reply.line_id).toBe(lines.sales!.id);
    expect(twilioTo(salesTw, phone)).toEqual(["sales answers"]);
    // Without reply_to, the last line exchanged (sales now) keeps it.
    expect((await sendVia(b, { phone, message: "and again" })).line_id).toBe(lines.sales!.id);
    expect(twilioTo(mainTw, phone)).toEqual([]);
  });

  test("a phone known not to have iMessage goes to the fallback before anything is sent (not_on_imessage)", async () => {
    // The Android contact's answer was remembered on its first send (no iMessage); ask for the iMessage line explicitly.
    const bbBefore = bb.requests.length;
    const record = await sendVia(b, { phone: android, message: "asked for iMessage", line: "iphone" });
    expect(record.line_id).toBe(lines.main!.id);
    expect(twilioTo(mainTw, android).at(-1)).toBe("asked for iMessage");
    // Remembered: BlueBubbles was not asked again, and nothing was sent there.
    expect(bb.requests.slice(bbBefore)).toEqual([]);
    const events = (await rerouted()).filter((e) => e.data.id === record.id);
    expect(events.map((e) => [e.data.from_line, e.data.to_line, e.data.reason, e.data.line_id])).toEqual([[lines.iphone!.id, lines.main!.id, "not_on_imessage", lines.main!.id]]);
  });

  test("a timeout on the iMessage line is never rerouted: 504, the message not final, nothing sent by SMS", async () => {
    await patchLine(a, "iphone", { settings: { url: bb.url, send_timeout_ms: 1000 } });
    await seenBy(b, "B to take the 1 s send timeout", (l) => l.find((x) => x.name === "iphone")?.settings.send_timeout_ms === 1000);
    bb.replyToSend({ kind: "sent", delayMs: 3_000 });
    try {
      const res = await call<{ error: { code: string; message_id?: string }; message_id?: string }>(b, "POST", "/api/send", { body: { phone: iphone, message: "slow Mac" } });
      expect(res.status).toBe(504);
      expect(res.body.error.code).toBe("GATEWAY_TIMEOUT");
      const stored = (await history(a, iphone)).messages.find((m) => m.message === "slow Mac") as Record_;
      expect(stored.line_id).toBe(lines.iphone!.id);
      expect(["queued", "sent"]).toContain(stored.status);
      expect(twilioTo(mainTw, iphone)).toEqual([]);
      expect((await rerouted()).filter((e) => e.data.id === stored.id)).toEqual([]);
    } finally {
      bb.replyToSend({ kind: "sent" });
    }
  });

  test("an iMessage line whose server refuses connections falls back once to its fallback (unreachable), on the fallback's line", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    await patchLine(a, "iphone", { settings: { url: closedUrl } });
    await seenBy(b, "B to take the iphone line's new URL", (l) => l.find((x) => x.name === "iphone")?.settings.url === closedUrl);
    const before = mainTw.sends.length;
    const record = await sendVia(b, { phone: iphone, message: "the Mac is down" });
    expect(record.line_id).toBe(lines.main!.id);
    expect(mainTw.sends.slice(before).map((r) => [r.body.To, r.body.Body, r.body.From])).toEqual([[iphone, "the Mac is down", MAIN_FROM]]);
    const events = (await rerouted()).filter((e) => e.data.id === record.id);
    expect(events.map((e) => [e.data.from_line, e.data.to_line, e.data.reason])).toEqual([[lines.iphone!.id, lines.main!.id, "unreachable"]]);
    expect(record.status).toBe("sent");
  });

  test("a new contact while the Mac refuses connections is rerouted too, and only once: with the fallback refusing as well, 502", async () => {
    const closed = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    await patchLine(a, "main", { settings: { account_sid: mainTw.accountSid, api_url: closedUrl } });
    await seenBy(b, "B to take the main line's new API URL", (l) => l.find((x) => x.name === "main")?.settings.api_url === closedUrl);
    const phone = newPhone();
    bb.imessage.add(phone);
    const res = await call<{ error: { code: string; message: string } }>(b, "POST", "/api/send", { body: { phone, message: "nobody up", line: "iphone" } });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe("BAD_GATEWAY");
    const [stored] = (await history(a, phone)).messages as Record_[];
    expect(stored).toMatchObject({ message: "nobody up", status: "failed", line_id: lines.main!.id });
    expect((await rerouted()).filter((e) => e.data.id === stored!.id).map((e) => e.data.reason)).toEqual(["unreachable"]);
  });
});
