// The BlueBubbles driver against a fake BlueBubbles server on 127.0.0.1, over real HTTP
// with the real server (docs/api.md statuses, send and webhooks; docs/networks.md):
// - the message/text request Textwire makes (password, chatGuid, one tempGuid per message);
// - webhooks at /webhooks/bluebubbles?secret=…: inbound stored once per guid, a wrong or
//   missing secret refused with 401; the isFromMe echo of our own message matched to it, not
//   stored again; delivery and error updates moving its status forward only;
// - catch-up: what the webhooks missed is fetched with message/query at start, stored once
//   across restarts;
// - the contact's tapbacks (reactions, never messages), typing, read receipts, edits and
//   unsends, as the server posts them, applied to the records and listed as events; ours
//   through the API reaching the server's Private API routes (422 when it is off, 409 when
//   Apple ignored an edit or unsend), typing stopped by our reply and never by a DELETE;
// - missing driver settings stop start-up with one line naming the variable.
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { call, expectError, expectRecord, expectSendResult, history, newPhone, poll, send, type MessageRecord, type SendResult } from "./api";
import { lines, spawnServer, startServer, testDatabase, waitUntil, type EnvOverlay, type Server, type TestDatabase } from "./harness";
import {
  bbAttachment,
  bbMessage,
  bbNotification,
  bbTapback,
  bbUpdated,
  blueBubblesEnv,
  postBlueBubblesWebhook,
  startFakeBlueBubbles,
  type FakeBlueBubbles,
  type WebhookReply,
} from "../support/fake-bluebubbles";

// Tests that start servers of their own wait up to 15 s for each; every wait inside is bounded.
setDefaultTimeout(60_000);

const SECRET = randomBytes(24).toString("base64url");

const bbEnv = (fake: FakeBlueBubbles, overrides: EnvOverlay = {}): EnvOverlay => blueBubblesEnv(fake, SECRET, overrides);

let fake: FakeBlueBubbles;
let server: Server;
const servers: Server[] = [];
const fakes: FakeBlueBubbles[] = [];
const dbs: TestDatabase[] = [];

beforeAll(async () => {
  fake = startFakeBlueBubbles();
  server = await startServer({ env: bbEnv(fake) });
}, 60_000);
afterEach(() => {
  fake.replyToSend({ kind: "sent" });
});
afterAll(async () => {
  server?.kill();
  for (const s of servers) s.kill();
  await fake?.stop();
  for (const f of fakes) await f.stop();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((db) => db.cleanup()));
}, 120_000);

function expect2xx(reply: WebhookReply, what: string): void {
  if (reply.status < 200 || reply.status > 299) throw new Error(`${what}: expected 2xx, got ${reply.status}: ${reply.text.slice(0, 300)}`);
}

function expect401(reply: WebhookReply): void {
  let body: unknown;
  try {
    body = JSON.parse(reply.text);
  } catch {
    body = undefined;
  }
  expectError({ ...reply, body }, 401, "UNAUTHORIZED", [SECRET, fake.password]);
}

function webhook(event: { type: string; data: unknown }, secret: string | null = SECRET, target: Server = server) {
  return postBlueBubblesWebhook(target.url, secret, event);
}

/** Sends through Textwire and returns its answer, the request BlueBubbles got, and the message it answered with. */
async function sendTracked(phone: string, text: string) {
  // A contact the Mac has a chat with already: the send goes to that chat with message/text.
  fake.addChat(phone);
  const before = fake.sends.length;
  const sentBefore = fake.sent.length;
  const result = await send(server, phone, text);
  expect(fake.sends.length).toBe(before + 1);
  expect(fake.sent.length).toBe(sentBefore + 1);
  return { result, request: fake.sends[before]!, message: fake.sent[sentBefore]! };
}

async function statusOf(phone: string, id: string, target: Server = server): Promise<string | undefined> {
  const { messages } = await history(target, phone);
  return messages.find((m) => m.id === id)?.status;
}

/** What BlueBubbles reports about a from-me message later: the same guid, no tempGuid. */
/** An `updated-message` as the server posts it: no chats, no tempGuid (fake-bluebubbles.ts bbUpdated). */
const updateOf = bbUpdated;

describe("sending through BlueBubbles", () => {
  test("POST /api/send makes one POST /api/v1/message/text?password=… with the guid of the Mac's chat with <phone>, a tempGuid, the text and method apple-script", async () => {
    const phone = newPhone();
    const text = "Your table is ready 🍽️ — \"Café\" & co";
    const { result, request } = await sendTracked(phone, text);
    expectSendResult(result);
    expect(request.method).toBe("POST");
    expect(request.path).toBe("/api/v1/message/text");
    expect(request.query).toEqual({ password: fake.password });
    expect(request.headers["content-type"]).toStartWith("application/json");
    expect(Object.keys(request.body).sort()).toEqual(["chatGuid", "message", "method", "tempGuid"]);
    expect(request.body.chatGuid).toBe(`iMessage;-;${phone}`);
    expect(request.body.message).toBe(text);
    expect(request.body.method).toBe("apple-script");
    expect(typeof request.body.tempGuid).toBe("string");
    expect(request.body.tempGuid.length).toBeGreaterThan(0);
  });

  test("the message is in history as outbound and `sent` once BlueBubbles took it", async () => {
    const phone = newPhone();
    const { result } = await sendTracked(phone, "taken by the Mac");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, phone, message: "taken by the Mac", direction: "outbound", status: "sent", timestamp: result.timestamp });
  });

  test("every message gets its own tempGuid, even with the same text to the same phone", async () => {
    const phone = newPhone();
    const temps: string[] = [];
    for (let i = 0; i < 3; i++) temps.push((await sendTracked(phone, "same text")).request.body.tempGuid);
    expect(new Set(temps).size).toBe(3);
  });

  test("a BlueBubbles server error (500) → 502 BAD_GATEWAY; the message is failed in history", async () => {
    const phone = newPhone();
    fake.replyToSend({ kind: "error", httpStatus: 500, message: "Failed to send message! See attached error for more information." });
    const reply = await call(server, "POST", "/api/send", { body: { phone, message: "mac asleep" } });
    expectError(reply, 502, "BAD_GATEWAY", [fake.password, SECRET]);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { phone, message: "mac asleep", direction: "outbound", status: "failed" });
  });

  test("BlueBubbles unreachable → 502 BAD_GATEWAY; the message is failed in history", async () => {
    const closed = startFakeBlueBubbles({ password: fake.password });
    const closedUrl = closed.url;
    await closed.stop();
    const down = await startServer({ env: bbEnv(fake, { BLUEBUBBLES_URL: closedUrl }) });
    servers.push(down);
    const phone = newPhone();
    expectError(await call(down, "POST", "/api/send", { body: { phone, message: "nobody home" } }), 502, "BAD_GATEWAY", [fake.password]);
    const { messages } = await history(down, phone);
    expect(messages.map((m) => [m.message, m.status])).toEqual([["nobody home", "failed"]]);
    down.kill();
  });

  test("BlueBubbles refusing the password (401) → 502 BAD_GATEWAY, and the password is never echoed", async () => {
    const wrong = "wrong-password-" + randomBytes(8).toString("hex");
    const misconfigured = await startServer({ env: bbEnv(fake, { BLUEBUBBLES_PASSWORD: wrong }) });
    servers.push(misconfigured);
    const phone = newPhone();
    expectError(await call(misconfigured, "POST", "/api/send", { body: { phone, message: "locked out" } }), 502, "BAD_GATEWAY", [wrong, fake.password]);
    const { messages } = await history(misconfigured, phone);
    expect(messages.map((m) => m.status)).toEqual(["failed"]);
    misconfigured.kill();
  });
});

describe("inbound messages: POST /webhooks/bluebubbles?secret=…", () => {
  test("a new-message from someone, with the right secret, is stored: history and poll show it", async () => {
    const phone = newPhone();
    const reply = await webhook({ type: "new-message", data: bbMessage({ address: phone, text: "Are you open today?" }) });
    expect2xx(reply, "new-message");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { phone, message: "Are you open today?", direction: "inbound", status: "received" });
    const polled = await poll(server, { phone });
    expect(polled.count).toBe(1);
    expect(polled.messages[0]).toEqual(messages[0]!);
  });

  test("the same guid twice is stored once", async () => {
    const phone = newPhone();
    const message = bbMessage({ address: phone, text: "just once" });
    expect2xx(await webhook({ type: "new-message", data: message }), "first");
    expect2xx(await webhook({ type: "new-message", data: message }), "again");
    expect((await history(server, phone)).total).toBe(1);
    expect((await poll(server, { phone })).count).toBe(1);
  });

  const refused: [string, string | null][] = [
    ["a wrong secret", "x".repeat(SECRET.length)],
    ["the secret in another case", SECRET.toUpperCase() === SECRET ? SECRET.toLowerCase() : SECRET.toUpperCase()],
    ["the secret with a character missing", SECRET.slice(0, -1)],
    ["an empty secret", ""],
    ["no secret at all", null],
  ];

  test.each(refused)("refused with 401 JSON and nothing stored: %s", async (_what, secret) => {
    const phone = newPhone();
    expect401(await webhook({ type: "new-message", data: bbMessage({ address: phone, text: "let me in" }) }, secret));
    expect((await history(server, phone)).total).toBe(0);
    expect((await poll(server, { phone })).count).toBe(0);
    // With the right secret the same kind of message is taken: the refusal was for the secret.
    expect2xx(await webhook({ type: "new-message", data: bbMessage({ address: phone, text: "genuine" }) }), "genuine");
    expect((await history(server, phone)).messages.map((m) => m.message)).toEqual(["genuine"]);
  });

  test("no API key is needed (BlueBubbles has none): the secret alone admits the request", async () => {
    const phone = newPhone();
    const res = await fetch(`${server.url}/webhooks/bluebubbles?secret=${SECRET}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ type: "new-message", data: bbMessage({ address: phone, text: "no bearer" }) }),
    });
    expect(res.status).toBeGreaterThanOrEqual(200);
    expect(res.status).toBeLessThan(300);
    expect((await history(server, phone)).total).toBe(1);
  });
});

describe("reports on our own messages", () => {
  test("the isFromMe echo of our message (the tempGuid we sent) is matched to it, not stored again", async () => {
    const phone = newPhone();
    const { result, request, message } = await sendTracked(phone, "echo me");
    expect2xx(await webhook({ type: "new-message", data: message }), "echo without tempGuid");
    expect2xx(await webhook({ type: "new-message", data: { ...message, tempGuid: request.body.tempGuid } }), "echo");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, message: "echo me", direction: "outbound", status: "sent", timestamp: result.timestamp });
    expect((await poll(server, { phone })).count).toBe(0);
  });

  test("an echo and a delivery report that arrive before BlueBubbles' answer to the send are matched to our message, not stored", async () => {
    // BlueBubbles emits new-message for our message when it sees it in the Mac's database,
    // which may be before its HTTP answer to message/text reaches Textwire.
    const phone = newPhone();
    fake.addChat(phone);
    const guid = crypto.randomUUID().toUpperCase();
    let release!: () => void;
    const answered = new Promise<void>((resolve) => (release = resolve));
    fake.replyToSend(async () => {
      await answered;
      return { kind: "sent", guid };
    });
    const before = fake.sends.length;
    const pending = call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "quick echo" } });
    try {
      await fake.waitFor("the message/text request", () => fake.sends.length > before);
      const tempGuid = fake.sends[before]!.body.tempGuid as string;
      const echo = bbMessage({ address: phone, text: "quick echo", guid, isFromMe: true, tempGuid });
      expect2xx(await webhook({ type: "new-message", data: echo }), "early echo");
      expect2xx(await webhook({ type: "updated-message", data: updateOf(echo, { dateDelivered: Date.now(), isDelivered: true }) }), "early delivered");
    } finally {
      release();
    }
    const reply = await pending;
    expect(reply.status).toBe(200);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expect(messages[0]!.id).toBe(reply.body.message_id);
    expect(messages[0]!.direction).toBe("outbound");
    expect(messages[0]!.status).toBe("delivered");
    expect((await poll(server, { phone })).count).toBe(0);
  });

  test("an updated-message with dateDelivered makes it delivered; a late echo without dateDelivered leaves it delivered", async () => {
    const phone = newPhone();
    const { result, message } = await sendTracked(phone, "deliver me");
    expect2xx(await webhook({ type: "updated-message", data: updateOf(message, { dateDelivered: Date.now(), isDelivered: true }) }), "delivered");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");
    expect2xx(await webhook({ type: "new-message", data: message }), "late echo");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");
    const { total } = await history(server, phone);
    expect(total).toBe(1);
  });

  test("a send error reported on our message makes it failed, and a later delivery report does not change it", async () => {
    const phone = newPhone();
    const { result, message } = await sendTracked(phone, "will not arrive");
    expect2xx(await webhook({ type: "updated-message", data: updateOf(message, { error: 22 }) }), "error");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
    expect2xx(await webhook({ type: "updated-message", data: updateOf(message, { dateDelivered: Date.now(), isDelivered: true }) }), "late delivered");
    expect2xx(await webhook({ type: "new-message", data: message }), "late echo");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
  });

  test("a report with a wrong secret is refused with 401 and changes nothing", async () => {
    const phone = newPhone();
    const { result, message } = await sendTracked(phone, "keep me");
    expect401(await webhook({ type: "updated-message", data: updateOf(message, { error: 4 }) }, "y".repeat(SECRET.length)));
    expect(await statusOf(phone, result.message_id)).toBe("sent");
  });
});

describe("catch-up: what the webhooks missed, fetched with message/query", () => {
  function newFake(): FakeBlueBubbles {
    const f = startFakeBlueBubbles();
    fakes.push(f);
    return f;
  }
  async function newDb(): Promise<TestDatabase> {
    const db = await testDatabase();
    dbs.push(db);
    return db;
  }
  async function boot(f: FakeBlueBubbles, db: TestDatabase, apiKey: string): Promise<Server> {
    const s = await startServer({ env: bbEnv(f), db, apiKey });
    servers.push(s);
    return s;
  }
  /**
   * SIGTERM and a bounded wait for exit. A request answered first: the server logs "listening"
   * before it installs its SIGTERM handler (a defect of its own, reported apart), and this
   * file is about catch-up, not about that window.
   */
  async function stop(s: Server): Promise<number> {
    expect((await s.fetch("/health")).status).toBe(200);
    return s.stop();
  }
  async function waitForQueries(f: FakeBlueBubbles, n: number): Promise<void> {
    await f.waitFor(`${n} message/query requests`, (reqs) => reqs.filter((r) => r.path === "/api/v1/message/query").length >= n);
  }
  async function waitForText(s: Server, phone: string, text: string): Promise<void> {
    await waitUntil(`"${text}" in the history of ${phone}`, async () => (await history(s, phone, "limit=100")).messages.some((m) => m.message === text));
  }
  async function texts(s: Server, phone: string): Promise<string[]> {
    const all: string[] = [];
    for (let offset = 0; ; offset += 100) {
      const page = await history(s, phone, `limit=100&offset=${offset}`);
      all.push(...page.messages.map((m) => m.message));
      if (page.messages.length < 100) return all.reverse();
    }
  }

  test("messages that arrived while Textwire was down are stored once at start; later starts do not store them twice", async () => {
    const f = newFake();
    const db = await newDb();
    const phone = newPhone();
    const key = "tw_test_" + randomBytes(24).toString("base64url");

    const first = await boot(f, db, key);
    await waitForQueries(f, 1);
    const query = f.queries[0]!;
    expect(query.query).toEqual({ password: f.password });
    expect(query.headers["content-type"]).toStartWith("application/json");
    expect(query.body.sort).toBe("ASC");
    expect(typeof query.body.after).toBe("number");
    expect(typeof query.body.limit).toBe("number");
    expect(query.body.limit).toBeGreaterThan(0);
    expect(typeof query.body.offset).toBe("number");
    expect(await stop(first)).toBe(0);

    // While Textwire is down, three messages reach the Mac; no webhook reaches Textwire.
    const t = Date.now();
    for (let i = 1; i <= 3; i++) f.messages.push(bbMessage({ address: phone, text: `missed ${i}`, dateCreated: t + i }));

    const second = await boot(f, db, key);
    await waitForText(second, phone, "missed 3");
    expect(await texts(second, phone)).toEqual(["missed 1", "missed 2", "missed 3"]);
    const polled = await poll(second, { phone });
    expect(polled.messages.map((m) => [m.message, m.direction, m.status])).toEqual([
      ["missed 1", "inbound", "received"],
      ["missed 2", "inbound", "received"],
      ["missed 3", "inbound", "received"],
    ]);

    // One more arrives by webhook (and is on the Mac too), then Textwire stops again.
    const live = bbMessage({ address: phone, text: "live", dateCreated: Date.now() });
    f.messages.push(live);
    expect2xx(await webhook({ type: "new-message", data: live }, SECRET, second), "live webhook");
    expect(await stop(second)).toBe(0);

    // A third start finds all of those again on the Mac, plus one new message.
    f.messages.push(bbMessage({ address: phone, text: "missed 4", dateCreated: Date.now() + 1 }));
    const third = await boot(f, db, key);
    await waitForText(third, phone, "missed 4");
    expect(await texts(third, phone)).toEqual(["missed 1", "missed 2", "missed 3", "live", "missed 4"]);
    expect((await poll(third, { phone })).count).toBe(5);
    expect(await stop(third)).toBe(0);

    // A fourth start with nothing new, then one new message: still each once.
    f.messages.push(bbMessage({ address: phone, text: "missed 5", dateCreated: Date.now() + 1 }));
    const fourth = await boot(f, db, key);
    await waitForText(fourth, phone, "missed 5");
    expect(await texts(fourth, phone)).toEqual(["missed 1", "missed 2", "missed 3", "live", "missed 4", "missed 5"]);
    fourth.kill();
  });

  test("the echo of a message we sent, found by catch-up, is matched to it and not stored as inbound", async () => {
    const f = newFake();
    const db = await newDb();
    const phone = newPhone();
    const key = "tw_test_" + randomBytes(24).toString("base64url");
    const first = await boot(f, db, key);
    await waitForQueries(f, 1);
    const sent = await send(first, phone, "sent before the restart");
    expect(await stop(first)).toBe(0);

    // Delivered while Textwire was down; a new inbound message marks when catch-up is done.
    const ours = f.sent.at(-1)!;
    ours.dateDelivered = Date.now();
    ours.isDelivered = true;
    f.messages.push(bbMessage({ address: phone, text: "reply while down", dateCreated: Date.now() + 1 }));

    const second = await boot(f, db, key);
    await waitForText(second, phone, "reply while down");
    // One catch-up page stores its inbound messages first, then applies the status reports.
    await waitUntil("the echo's delivery applied", async () => (await history(second, phone)).messages.some((m) => m.id === sent.message_id && m.status === "delivered"));
    const { messages, total } = await history(second, phone);
    expect(total).toBe(2);
    expect(messages.map((m) => [m.message, m.direction])).toEqual([
      ["reply while down", "inbound"],
      ["sent before the restart", "outbound"],
    ]);
    expect(messages[1]!.id).toBe(sent.message_id);
    expect(messages[1]!.status).toBe("delivered");
    expect((await poll(second, { phone })).messages.map((m) => m.message)).toEqual(["reply while down"]);
    second.kill();
  });

  test("more missed messages than one message/query page (150) are all stored, each once", async () => {
    const f = newFake();
    const db = await newDb();
    const phone = newPhone();
    const key = "tw_test_" + randomBytes(24).toString("base64url");
    const first = await boot(f, db, key);
    await waitForQueries(f, 1);
    expect(await stop(first)).toBe(0);

    const t = Date.now();
    const expected: string[] = [];
    for (let i = 1; i <= 150; i++) {
      expected.push(`backlog ${i}`);
      f.messages.push(bbMessage({ address: phone, text: `backlog ${i}`, dateCreated: t + i }));
    }
    const second = await boot(f, db, key);
    await waitForText(second, phone, "backlog 150");
    expect(await texts(second, phone)).toEqual(expected);
    const page1 = await poll(second, { phone, limit: 100 });
    expect(page1.count).toBe(100);
    expect(page1.has_more).toBe(true);
    const page2 = await poll(second, { phone, limit: 100, since: page1.messages.at(-1)!.timestamp });
    expect(page2.count).toBe(50);
    expect(page2.has_more).toBe(false);
    second.kill();
  });

  test("a failing message/query at start does not stop the server; webhooks still work", async () => {
    const f = newFake();
    f.replyToQuery({ kind: "error", httpStatus: 500, message: "iMessage database locked" });
    const db = await newDb();
    const s = await boot(f, db, "tw_test_" + randomBytes(24).toString("base64url"));
    await waitForQueries(f, 1);
    const phone = newPhone();
    expect2xx(await webhook({ type: "new-message", data: bbMessage({ address: phone, text: "still here" }) }, SECRET, s), "webhook");
    expect(await texts(s, phone)).toEqual(["still here"]);
    expect(s.proc.exitCode).toBeNull();
    s.kill();
  });

  test("the first start does not take the Mac's old message history for new inbound messages", async () => {
    // A Mac that has used iMessage for years holds thousands of old messages. Connecting
    // Textwire must not store them as `received` now: poll would hand every one of them
    // to the workflows as new, and an autoresponder would answer them all.
    const f = newFake();
    const db = await newDb();
    const phone = newPhone();
    const key = "tw_test_" + randomBytes(24).toString("base64url");
    const yearAgo = Date.now() - 400 * 24 * 3600 * 1000;
    for (let i = 1; i <= 5; i++) f.messages.push(bbMessage({ address: phone, text: `old ${i}`, dateCreated: yearAgo + i * 60_000 }));

    const s = await boot(f, db, key);
    // A live message once the server is up; then a bounded moment (whether or not this start
    // asks message/query at all) for any start-up catch-up to have applied what it applies.
    expect2xx(await webhook({ type: "new-message", data: bbMessage({ address: phone, text: "hello, new here" }) }, SECRET, s), "live");
    let seen: string[] = [];
    const deadline = Date.now() + 2000;
    while (Date.now() < deadline) {
      seen = await texts(s, phone);
      if (seen.some((t) => t.startsWith("old "))) break;
      await Bun.sleep(50);
    }
    expect(seen).toEqual(["hello, new here"]);
    expect((await poll(s, { phone })).messages.map((m) => m.message)).toEqual(["hello, new here"]);
    s.kill();
  });
});

describe("as the real BlueBubbles server behaves (the stand-in follows its source)", () => {
  /** A stand-in that posts its webhooks to a server of its own; short send timeout and reconciliation. */
  async function pair(opts: { webhooks?: boolean; env?: EnvOverlay } = {}): Promise<{ f: FakeBlueBubbles; s: Server }> {
    const f = startFakeBlueBubbles();
    fakes.push(f);
    const s = await startServer({
      env: bbEnv(f, { BLUEBUBBLES_SEND_TIMEOUT_MS: "2000", BLUEBUBBLES_RECONCILE_AFTER_MS: "1000", LOG_LEVEL: "debug", ...opts.env }),
    });
    servers.push(s);
    if (opts.webhooks !== false) f.webhooks.push(`${s.url}/webhooks/bluebubbles?secret=${SECRET}`);
    return { f, s };
  }
  const statusIs = (s: Server, phone: string, id: string, status: string) =>
    waitUntil(`${id} ${status}`, async () => (await statusOf(phone, id, s)) === status, 15_000);

  test("the stand-in refuses a send to a chat the Mac does not have (500 iMessage Error) and one without tempGuid (400)", async () => {
    const phone = newPhone();
    const post = async (body: unknown) => {
      const res = await fetch(`${fake.url}/api/v1/message/text?password=${encodeURIComponent(fake.password)}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as { status: number; message: string; error: { type: string; message: string } } };
    };
    const unknown = await post({ chatGuid: `any;-;${phone}`, tempGuid: "t-1", message: "hi", method: "apple-script" });
    expect(unknown.status).toBe(500);
    expect(unknown.body.status).toBe(500);
    expect(unknown.body.message).toBe("Message Send Error");
    expect(unknown.body.error.type).toBe("iMessage Error");
    fake.addChat(phone);
    const noTemp = await post({ chatGuid: `iMessage;-;${phone}`, message: "hi", method: "apple-script" });
    expect(noTemp.status).toBe(400);
    expect(noTemp.body.error).toEqual({ type: "Validation Error", message: "A 'tempGuid' is required when sending via AppleScript" });
  });

  test("a new contact: the chat is looked up, then started with chat/new; the next send goes to that chat with message/text", async () => {
    const { f, s } = await pair();
    const phone = newPhone();
    const first = await send(s, phone, "Welcome!");
    const [lookup, create] = f.requests.filter((r) => r.path !== "/api/v1/message/query");
    expect(lookup!.path).toBe("/api/v1/handle/query");
    expect(lookup!.body.address).toBe(phone);
    expect(create!.path).toBe("/api/v1/chat/new");
    expect(create!.body).toEqual({ addresses: [phone], message: "Welcome!", service: "iMessage", method: "apple-script", tempGuid: create!.body.tempGuid });
    expect(create!.body.tempGuid).toContain(first.message_id);
    const second = await send(s, phone, "Your order shipped");
    const text = f.sends.at(-1)!;
    expect(text.path).toBe("/api/v1/message/text");
    expect(text.body.chatGuid).toBe(`iMessage;-;${phone}`);
    expect(text.body.method).toBe("apple-script");
    expect(text.body.tempGuid).toContain(second.message_id);
    expect(f.sends).toHaveLength(2);
    expect(f.sent.map((m) => m.text)).toEqual(["Welcome!", "Your order shipped"]);
    // The two new-message events of each send (without, then with the tempGuid) settle it.
    await statusIs(s, phone, first.message_id, "sent");
    await statusIs(s, phone, second.message_id, "sent");
    const { messages, total } = await history(s, phone);
    expect(total).toBe(2);
    expect(messages.every((m) => m.direction === "outbound")).toBe(true);
    expect((await poll(s, { phone })).count).toBe(0);
  });

  test("a contact the Mac already has an SMS chat with: message/text to that chat's guid, no chat/new", async () => {
    const { f, s } = await pair();
    const phone = newPhone();
    f.addChat(phone, "SMS");
    const sent = await send(s, phone, "Green bubble");
    expect(f.sends.map((r) => [r.path, r.body.chatGuid])).toEqual([["/api/v1/message/text", `SMS;-;${phone}`]]);
    await statusIs(s, phone, sent.message_id, "sent");
  });

  test("a remembered chat gone from the Mac: that send fails (502), the next one looks the chat up again and starts it", async () => {
    const { f, s } = await pair();
    const phone = newPhone();
    const chat = f.addChat(phone);
    await send(s, phone, "first");
    f.chats.delete(chat.guid);
    expectError(await call(s, "POST", "/api/send", { body: { phone, message: "second" } }), 502, "BAD_GATEWAY", [f.password]);
    await send(s, phone, "third");
    expect(f.sends.map((r) => r.path)).toEqual(["/api/v1/message/text", "/api/v1/message/text", "/api/v1/chat/new"]);
    expect(f.requests.filter((r) => r.path === "/api/v1/handle/query")).toHaveLength(2);
  });

  test("BLUEBUBBLES_SERVICE=SMS starts new chats as SMS", async () => {
    const { f, s } = await pair({ env: { BLUEBUBBLES_SERVICE: "SMS" } });
    const phone = newPhone();
    await send(s, phone, "relay");
    expect(f.sends.map((r) => [r.path, r.body.service])).toEqual([["/api/v1/chat/new", "SMS"]]);
  });

  test("tapbacks are not stored and group messages stay out of one-to-one history and poll; an attachment-only message is stored, even when its file cannot be downloaded (logged)", async () => {
    const { f, s } = await pair();
    const phone = newPhone();
    const other = newPhone();
    const original = bbMessage({ address: phone, text: "hi" });
    await f.emit("new-message", original);
    await f.emit("new-message", bbTapback({ target: original, type: "love", address: phone }));
    // An emoji tapback (MessageTypeTransformer.ts leaves 2006 a number): not a reaction Textwire knows.
    const tapback = bbTapback({ target: original, type: "2006", address: phone });
    await f.emit("new-message", tapback);
    const group = f.addGroup([phone, other]);
    await f.emit("new-message", bbMessage({ address: phone, text: "hello all", chatGuid: group.guid }));
    // An attachment the Mac no longer has: its download is 404.
    const photo = bbMessage({ address: phone, text: "\uFFFC", attachments: [bbAttachment()] });
    await f.emit("new-message", photo);
    await f.emit("new-message", bbMessage({ address: phone, text: "marker" }));
    const polled = await poll(s, { phone });
    expect(polled.messages.map((m) => [m.message, (m as { media?: unknown[] }).media])).toEqual([
      ["hi", []],
      ["", []],
      ["marker", []],
    ]);
    expect((await history(s, phone)).total).toBe(3);
    expect((await poll(s, { phone: other })).count).toBe(0);
    // Logged while the webhooks were handled; the output reaches this process a little later.
    const logged = await waitUntil("the log lines", () => {
      const all = lines(s.stdout + s.stderr);
      const want = ["inbound media not downloaded", "tapback skipped"];
      return want.every((w) => all.some((l) => l.includes(w))) ? all : undefined;
    }, 5_000);
    const mediaLine = logged.find((l) => l.includes("inbound media not downloaded") && l.includes(photo.guid));
    expect(mediaLine).toBeDefined();
    expect(mediaLine!).toContain("HTTP 404");
    expect(mediaLine!).not.toContain(f.password);
    expect(logged.some((l) => l.includes("tapback skipped") && l.includes(tapback.guid))).toBe(true);
  });

  test("a send slower than the timeout is 504 with message_id, stays queued, is never sent twice for its Idempotency-Key, and its echo makes it sent", async () => {
    const { f, s } = await pair();
    const phone = newPhone();
    f.addChat(phone);
    f.replyToSend({ kind: "sent", delayMs: 6000 });
    const key = `bb-slow-${randomBytes(6).toString("hex")}`;
    const body = { phone, message: "slow one" };
    const first = await call<SendResult>(s, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });
    const err = expectError(first, 504, "GATEWAY_TIMEOUT", [f.password, SECRET]);
    const id = (err.error as { message_id?: string }).message_id!;
    expect(typeof id).toBe("string");
    expect(err.error.message).toBe("network: no answer in time; the status will follow");
    expect(await statusOf(phone, id, s)).toBe("queued");
    // A retry while the outcome is unknown sends nothing and answers from the record.
    const retry = await call(s, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });
    expect((expectError(retry, 504, "GATEWAY_TIMEOUT").error as { message_id?: string }).message_id).toBe(id);
    expect(f.sends).toHaveLength(1);
    // The Mac sends it after all: the echo with our tempGuid settles it.
    await statusIs(s, phone, id, "sent");
    const after = await call<SendResult>(s, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });
    expect(after.status).toBe(200);
    expect(after.body.message_id).toBe(id);
    expect(f.sends).toHaveLength(1);
    expect(f.sent).toHaveLength(1);
    const { total } = await history(s, phone);
    expect(total).toBe(1);
  });

  test("a send that takes 60 s (default 120 s timeout) ends delivered, not failed; a retry with its key meanwhile sends nothing", async () => {
    const phone = newPhone();
    fake.addChat(phone);
    fake.replyToSend({ kind: "sent", delayMs: 60_000 });
    const key = `bb-60s-${randomBytes(6).toString("hex")}`;
    const body = { phone, message: "a minute" };
    const before = fake.sends.length;
    const pending = call<SendResult>(server, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });
    await fake.waitFor("the message/text request", () => fake.sends.length > before);
    const retry = await call(server, "POST", "/api/send", { body, headers: { "Idempotency-Key": key } });
    expect(retry.status).toBeGreaterThanOrEqual(400);
    expect([409, 504]).toContain(retry.status);
    const reply = await pending;
    expect(reply.status).toBe(200);
    const message = fake.sent.at(-1)!;
    expect2xx(await webhook({ type: "updated-message", data: updateOf(message, { dateDelivered: Date.now(), isDelivered: true }) }), "delivered");
    expect(await statusOf(phone, reply.body.message_id)).toBe("delivered");
    expect(fake.sends.length).toBe(before + 1);
  }, 150_000);

  test("reconciliation: a delivery whose webhook was missed, and a timed-out send never echoed, are found on the server", async () => {
    const { f, s } = await pair({ webhooks: false });
    const phone = newPhone();
    f.addChat(phone);
    const ok = await send(s, phone, "deliver me later");
    expect(await statusOf(phone, ok.message_id, s)).toBe("sent");
    // Delivered on the Mac; no webhook reaches Textwire, and catch-up only looks at new messages.
    f.sent.at(-1)!.dateDelivered = Date.now();
    f.sent.at(-1)!.isDelivered = true;
    await statusIs(s, phone, ok.message_id, "delivered");
    expect(f.requests.some((r) => r.method === "GET" && r.path === `/api/v1/message/${f.sent.at(-1)!.guid}`)).toBe(true);

    // Unknown outcome, no echo: found by chat, from-me and text around the send's time.
    f.replyToSend({ kind: "sent", delayMs: 5000 });
    const slow = await call(s, "POST", "/api/send", { body: { phone, message: "Lost in the mail?" } });
    const id = (expectError(slow, 504, "GATEWAY_TIMEOUT").error as { message_id?: string }).message_id!;
    await statusIs(s, phone, id, "sent");
    expect(f.sends).toHaveLength(2);
  });
});

describe("start-up without the BlueBubbles settings", () => {
  const required = ["BLUEBUBBLES_URL", "BLUEBUBBLES_PASSWORD", "WEBHOOK_SECRET"] as const;

  test.each(required)("NETWORK=bluebubbles without %s exits non-zero with one line naming it", async (name) => {
    const child = await spawnServer({ env: bbEnv(fake, { [name]: undefined }) });
    const code = await child.exited();
    expect(code).not.toBe(0);
    expect(child.stdout).not.toMatch(/listening on/);
    const errLines = lines(child.stderr);
    expect(errLines).toHaveLength(1);
    expect(errLines[0]!).toContain(name);
    expect(child.stderr).not.toContain(fake.password);
    expect(child.stderr).not.toContain(SECRET);
  });

  test.each([
    ["BLUEBUBBLES_SERVICE", "RCS"],
    ["BLUEBUBBLES_SEND_TIMEOUT_MS", "soon"],
    ["WEBHOOK_SECRET", "too-short"],
    ["WEBHOOK_SECRET", "has spaces and is long enough but not url safe"],
    ["BLUEBUBBLES_URL", "192.168.1.20:1234 without scheme"],
  ])("NETWORK=bluebubbles with a malformed %s (%p) exits non-zero with one line naming it, without echoing a secret", async (name, value) => {
    const child = await spawnServer({ env: bbEnv(fake, { [name]: value }) });
    const code = await child.exited();
    expect(code).not.toBe(0);
    const errLines = lines(child.stderr);
    expect(errLines).toHaveLength(1);
    expect(errLines[0]!).toContain(name);
    if (name === "WEBHOOK_SECRET") expect(child.stderr).not.toContain(value);
    expect(child.stderr).not.toContain(fake.password);
  });
});

describe("reactions, typing, read state, edits and unsends with the BlueBubbles server (its Private API on)", () => {
  type Conversed = MessageRecord & {
    reactions: { reaction: string; direction: string; phone: string | null; timestamp: string }[];
    read_at: string | null;
    edited_at: string | null;
    unsent_at: string | null;
  };
  // An event's data: the message's record as it is now, plus what the event carries.
  type Listed = {
    events: { type: string; data: Conversed & { phone?: string; typing?: boolean; previous_message?: string; reaction?: { reaction: string; direction: string; phone: string | null } } }[];
  };
  let f: FakeBlueBubbles;
  let s: Server;
  beforeAll(async () => {
    f = startFakeBlueBubbles({ privateApi: true });
    fakes.push(f);
    s = await startServer({ env: bbEnv(f) });
    servers.push(s);
    f.webhooks.push(`${s.url}/webhooks/bluebubbles?secret=${SECRET}`);
  }, 60_000);

  const recordOf = async (phone: string, id: string) => (await history(s, phone)).messages.find((m) => m.id === id) as Conversed;
  const eventsOf = async (type: string, phone: string) =>
    (await call<Listed>(s, "GET", `/api/events?type=${type}&limit=100`)).body.events.filter((e) => (e.data.phone ?? "") === phone);
  /** Our message through Textwire and the Mac's copy of it. */
  async function ours(phone: string, text: string) {
    f.addChat(phone);
    const sent = await send(s, phone, text);
    return { id: sent.message_id, mac: f.sent.at(-1)! };
  }
  /** The contact's message as the Mac announces it, and its id in Textwire. */
  async function theirs(phone: string, text: string) {
    const mac = bbMessage({ address: phone, text });
    f.messages.push(mac);
    await f.emit("new-message", mac);
    const stored = (await history(s, phone)).messages.find((m) => m.message === text)!;
    return { id: stored.id, mac };
  }

  test("the contact's tapback lands on our message as a reaction and an event, is never a message nor polled; its removal clears it", async () => {
    const phone = newPhone();
    const { id, mac } = await ours(phone, "Your order has shipped.");
    await f.contactReacts(mac, "love");
    expect((await recordOf(phone, id)).reactions).toEqual([{ reaction: "love", direction: "inbound", phone, timestamp: expect.any(String) }]);
    await f.contactReacts(mac, "-love");
    expect((await recordOf(phone, id)).reactions).toEqual([]);
    expect((await history(s, phone)).total).toBe(1);
    expect((await poll(s, { phone })).count).toBe(0);
    const reaction = { reaction: "love", direction: "inbound", phone };
    expect((await eventsOf("message.reaction_added", phone)).map((e) => [e.data.id, e.data.reaction])).toEqual([[id, reaction]]);
    expect((await eventsOf("message.reaction_removed", phone)).map((e) => [e.data.id, e.data.reaction])).toEqual([[id, reaction]]);
  });

  test("the contact's typing (typing-indicator) is a contact.typing event and no message", async () => {
    const phone = newPhone();
    await f.contactTypes(phone, true);
    await f.contactTypes(phone, false);
    expect((await eventsOf("contact.typing", phone)).map((e) => e.data.typing)).toEqual([true, false]);
    expect((await history(s, phone)).total).toBe(0);
  });

  test("a read receipt (updated-message with dateRead, no chats) sets read_at on our message; its status stays", async () => {
    const phone = newPhone();
    const { id, mac } = await ours(phone, "Did it arrive?");
    const status = (await recordOf(phone, id)).status;
    await f.contactReads(mac);
    const read = await recordOf(phone, id);
    expect(read.read_at).not.toBeNull();
    expect(read.status).toBe(status);
    expect((await eventsOf("message.read", phone)).map((e) => e.data.id)).toEqual([id]);
  });

  test("an edited, then unsent, inbound message changes its record once each, also when the server repeats the change late as new-message", async () => {
    const phone = newPhone();
    const { id, mac } = await theirs(phone, "See you at 6");
    await f.contactEdits(mac, "See you at 7");
    await f.emit("new-message", bbNotification(f.messages.find((m) => m.guid === mac.guid)!));
    const edited = await recordOf(phone, id);
    expect([edited.message, edited.edited_at !== null, edited.unsent_at]).toEqual(["See you at 7", true, null]);
    await f.contactUnsends(mac, { late: true });
    const unsent = await recordOf(phone, id);
    expect([unsent.message, unsent.unsent_at !== null]).toEqual(["", true]);
    expect((await eventsOf("message.edited", phone)).map((e) => [e.data.id, e.data.previous_message])).toEqual([[id, "See you at 6"]]);
    expect(await eventsOf("message.unsent", phone)).toHaveLength(1);
    expect((await history(s, phone)).total).toBe(1);
    expect((await poll(s, { phone })).messages.map((m) => m.id)).toEqual([id]);
  });

  test("GET /api/network: BlueBubbles can do everything, group chats included", async () => {
    const reply = await call<{ network: unknown }>(s, "GET", "/api/network");
    expect(reply.status).toBe(200);
    expect(reply.body.network).toEqual({
      name: "bluebubbles",
      capabilities: { reactions: true, typing: true, read_receipts: true, edit: true, unsend: true, groups: true, media: true, threads: true },
    });
  });

  test("our reaction reaches the server (message/react, -love to take it off) and stands in history", async () => {
    const phone = newPhone();
    f.addChat(phone);
    const { id, mac } = await theirs(phone, "Can you make it at 6?");
    const added = await call<{ message: Conversed }>(s, "POST", `/api/messages/${id}/reactions`, { body: { reaction: "love" } });
    expect(added.status).toBe(200);
    expect(added.body.message.reactions).toEqual([{ reaction: "love", direction: "outbound", phone: null, timestamp: expect.any(String) }]);
    const reacts = () => f.requests.filter((r) => r.path === "/api/v1/message/react").map((r) => r.body);
    expect(reacts()).toEqual([{ chatGuid: `iMessage;-;${phone}`, selectedMessageGuid: mac.guid, reaction: "love", partIndex: 0 }]);
    expect((await recordOf(phone, id)).reactions.map((r) => r.direction)).toEqual(["outbound"]);
    const removed = await call<{ message: Conversed }>(s, "DELETE", `/api/messages/${id}/reactions`);
    expect(removed.body.message.reactions).toEqual([]);
    expect(reacts().map((b) => b.reaction)).toEqual(["love", "-love"]);
    // The echo of our tapback (isFromMe) is neither the contact's reaction nor a message.
    expect((await history(s, phone)).total).toBe(1);
  });

  test("typing starts on the server and stops with our reply; a stop without a send is 422 and never a DELETE", async () => {
    const phone = newPhone();
    f.addChat(phone);
    const chat = `iMessage;-;${phone}`;
    const started = await call<{ typing: boolean }>(s, "POST", `/api/contacts/${encodeURIComponent(phone)}/typing`);
    expect([started.status, started.body.typing, f.typing.has(chat)]).toEqual([200, true, true]);
    const stop = await call(s, "DELETE", `/api/contacts/${encodeURIComponent(phone)}/typing`);
    expectError(stop, 422, "UNPROCESSABLE_CONTENT");
    expect((stop.body as { error: { message: string } }).error.message).toBe(
      "typing: the bluebubbles server cannot stop typing without a send (its DELETE /chat/:guid/typing starts it again)",
    );
    await send(s, phone, "Here is the answer");
    expect(f.typing.has(chat)).toBe(false);
    expect(f.requests.filter((r) => r.method === "DELETE")).toEqual([]);
  });

  test("marking read reaches the server (chat/:guid/read) and zeroes unread", async () => {
    const phone = newPhone();
    f.addChat(phone);
    await theirs(phone, "Are you there?");
    await theirs(phone, "Hello?");
    const contact = async () => (await call<{ contact: { unread: number } }>(s, "GET", `/api/contacts/${encodeURIComponent(phone)}`)).body.contact;
    expect((await contact()).unread).toBe(2);
    const read = await call<{ contact: { unread: number } }>(s, "POST", `/api/contacts/${encodeURIComponent(phone)}/read`);
    expect([read.status, read.body.contact.unread]).toEqual([200, 0]);
    expect(f.reads).toContain(`iMessage;-;${phone}`);
    expect((await contact()).unread).toBe(0);
  });

  test("ours edited and unsent on the server; Apple ignoring it (200, dateEdited unchanged) is 409 and the record stays", async () => {
    const phone = newPhone();
    const first = await ours(phone, "Meet at 6");
    const edited = await call<{ message: Conversed }>(s, "POST", `/api/messages/${first.id}/edit`, { body: { message: "Meet at 7" } });
    expect([edited.status, edited.body.message.message, first.mac.text]).toEqual([200, "Meet at 7", "Meet at 7"]);
    const second = await ours(phone, "Wrong chat");
    const unsent = await call<{ message: Conversed }>(s, "POST", `/api/messages/${second.id}/unsend`);
    expect([unsent.status, unsent.body.message.unsent_at !== null, second.mac.partCount]).toEqual([200, true, 0]);
    f.appleIgnores = true;
    try {
      const third = await ours(phone, "Final");
      expectError(await call(s, "POST", `/api/messages/${third.id}/edit`, { body: { message: "Changed" } }), 409, "CONFLICT");
      expectError(await call(s, "POST", `/api/messages/${third.id}/unsend`), 409, "CONFLICT");
      const kept = await recordOf(phone, third.id);
      expect([kept.message, kept.edited_at, kept.unsent_at]).toEqual(["Final", null, null]);
    } finally {
      f.appleIgnores = false;
    }
  });

  test("the server's Private API off: 422 naming the field for each action, nothing changed", async () => {
    const phone = newPhone();
    const { id } = await ours(phone, "Soon");
    f.privateApi.enabled = false;
    try {
      const refused = async (method: string, path: string, field: string, body?: unknown) => {
        const reply = await call(s, method, path, body === undefined ? {} : { body });
        expectError(reply, 422, "UNPROCESSABLE_CONTENT");
        expect((reply.body as { error: { message: string } }).error.message).toBe(`${field}: the bluebubbles server's Private API is off`);
      };
      await refused("POST", `/api/messages/${id}/reactions`, "reaction", { reaction: "like" });
      await refused("POST", `/api/contacts/${encodeURIComponent(phone)}/typing`, "typing");
      await refused("POST", `/api/contacts/${encodeURIComponent(phone)}/read`, "read");
      await refused("POST", `/api/messages/${id}/edit`, "message", { message: "Later" });
      await refused("POST", `/api/messages/${id}/unsend`, "unsend");
      const record = await recordOf(phone, id);
      expect([record.reactions, record.message, record.edited_at, record.unsent_at]).toEqual([[], "Soon", null, null]);
    } finally {
      f.privateApi.enabled = true;
    }
  });
});

describe("secrets stay out of the logs", () => {
  test("after every test above, no server's output held the BlueBubbles password or the webhook secret", () => {
    for (const s of [server, ...servers]) {
      const output = s.stdout + s.stderr;
      expect(output).not.toContain(SECRET);
      expect(output).not.toContain(encodeURIComponent(fake.password));
      expect(output).not.toContain(fake.password);
      for (const f of fakes) expect(output).not.toContain(f.password);
    }
  });
});
