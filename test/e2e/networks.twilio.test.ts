// The Twilio driver against a fake Twilio on 127.0.0.1, over real HTTP with the real
// server (docs/api.md statuses, send and webhooks; docs/networks.md):
// - the Messages.json request Textwire makes (path, Basic auth, form fields, StatusCallback);
// - signed inbound webhooks (X-Twilio-Signature over PUBLIC_URL + path + sorted params),
//   answered with empty TwiML, deduplicated by MessageSid, forged ones refused with 401;
// - status callbacks: forward only, `delivered` and `failed` final;
// - Twilio's errors mapped on POST /api/send (400 → 400, 429 → 429, 5xx or unreachable → 502;
//   no answer in time or a cut answer → 504, the message stays queued and is never sent twice);
// - missing driver settings stop start-up with one line naming the variable.
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
// The official SDK's webhook functions, to sign and check requests as Twilio's own code does.
import { getExpectedTwilioSignature, validateRequest } from "twilio/lib/webhooks/webhooks";
import { call, expectError, expectRecord, expectSendResult, history, newPhone, poll, send, type SendResult } from "./api";
import { lines, spawnServer, startServer, waitFor, type Server } from "./harness";
import {
  TEST_FROM as FROM,
  TEST_PUBLIC_URL as PUBLIC_URL,
  postTwilioWebhook,
  signTwilioRequest,
  startFakeTwilio,
  twilioInboundParams,
  twilioSid,
  twilioEnv,
  twilioStatusParams,
  type FakeTwilio,
  type WebhookReply,
} from "../support/fake-twilio";

// Tests that start servers of their own wait up to 15 s for each; every wait inside is bounded.
setDefaultTimeout(60_000);

const INBOUND_PATH = "/webhooks/twilio";
const STATUS_PATH = "/webhooks/twilio/status";
const EMPTY_TWIML = /^(<\?xml[^>]*\?>)?\s*(<Response\s*\/>|<Response>\s*<\/Response>)\s*$/;

let fake: FakeTwilio;
let server: Server;
const extraServers: Server[] = [];

beforeAll(async () => {
  fake = startFakeTwilio();
  server = await startServer({ env: twilioEnv(fake) });
}, 60_000);
afterEach(() => {
  fake.reply({ kind: "created" });
});
afterAll(async () => {
  server?.kill();
  for (const s of extraServers) s.kill();
  await fake?.stop();
}, 30_000);

function signed(path: string, params: Record<string, string>, authToken = fake.authToken): Promise<WebhookReply> {
  return postTwilioWebhook(server.url, path, params, signTwilioRequest(authToken, PUBLIC_URL + path, params));
}

function inboundParams(from: string, body: string, messageSid?: string) {
  return twilioInboundParams({ accountSid: fake.accountSid, from, to: FROM, body, ...(messageSid ? { messageSid } : {}) });
}

function statusParams(messageSid: string, to: string, status: string, errorCode?: string) {
  return twilioStatusParams({ accountSid: fake.accountSid, messageSid, status, from: FROM, to, ...(errorCode ? { errorCode } : {}) });
}

/** Sends through Textwire and returns its answer with the SID the fake Twilio gave the message. */
async function sendAndSid(phone: string, text: string): Promise<{ result: SendResult; sid: string }> {
  const before = fake.sids.length;
  const result = await send(server, phone, text);
  expect(fake.sids.length).toBe(before + 1);
  return { result, sid: fake.sids[before]! };
}

async function statusOf(phone: string, id: string): Promise<string | undefined> {
  const { messages } = await history(server, phone);
  return messages.find((m) => m.id === id)?.status;
}

function expect2xx(reply: WebhookReply, what: string): void {
  if (reply.status < 200 || reply.status > 299) throw new Error(`${what}: expected 2xx, got ${reply.status}: ${reply.text.slice(0, 300)}`);
}

describe("sending through Twilio's Messages resource", () => {
  test("POST /api/send makes one POST to /2010-04-01/Accounts/{AccountSid}/Messages.json with Basic auth and form-encoded To, Body, From, StatusCallback", async () => {
    const phone = newPhone();
    const text = "Your code is 1234 — ¿ok? 😀 a+b=c & 100% done";
    const before = fake.sends.length;
    const result = await send(server, phone, text);
    expectSendResult(result);

    const sends = fake.sends.slice(before);
    expect(sends).toHaveLength(1);
    const req = sends[0]!;
    expect(req.method).toBe("POST");
    expect(req.path).toBe(`/2010-04-01/Accounts/${fake.accountSid}/Messages.json`);
    expect(req.query).toEqual({});
    expect(req.headers.authorization).toBe(`Basic ${Buffer.from(`${fake.accountSid}:${fake.authToken}`).toString("base64")}`);
    expect(req.headers["content-type"]).toStartWith("application/x-www-form-urlencoded");
    // Textwire's own id rides in the callback URL, so an early report still finds its message.
    expect(req.body).toEqual({ To: phone, Body: text, From: FROM, StatusCallback: `${PUBLIC_URL}/webhooks/twilio/status?id=${result.message_id}` });
    // Each field once: no repeated parameters for Twilio to pick from.
    const raw = new URLSearchParams(req.rawBody);
    for (const name of ["To", "Body", "From", "StatusCallback"]) expect(raw.getAll(name)).toHaveLength(1);
  });

  test("the sent message is in history as outbound and `sent` once Twilio accepted it (queued at Twilio)", async () => {
    const phone = newPhone();
    const { result } = await sendAndSid(phone, "accepted by Twilio");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, phone, message: "accepted by Twilio", direction: "outbound", status: "sent", timestamp: result.timestamp });
  });

  test("each send is its own Messages.json request to its own recipient", async () => {
    const a = newPhone();
    const b = newPhone();
    const before = fake.sends.length;
    await send(server, a, "first");
    await send(server, b, "second");
    const sends = fake.sends.slice(before);
    expect(sends.map((r) => [r.body.To, r.body.Body])).toEqual([
      [a, "first"],
      [b, "second"],
    ]);
  });

  test("with TWILIO_FROM a Messaging Service SID (MG…), the request carries MessagingServiceSid and no From", async () => {
    const mg = twilioSid("MG");
    const mgServer = await startServer({ env: twilioEnv(fake, { TWILIO_FROM: mg }) });
    extraServers.push(mgServer);
    const phone = newPhone();
    const before = fake.sends.length;
    const sent = await send(mgServer, phone, "via messaging service");
    const sends = fake.sends.slice(before);
    expect(sends).toHaveLength(1);
    expect(sends[0]!.body).toEqual({
      To: phone,
      Body: "via messaging service",
      MessagingServiceSid: mg,
      StatusCallback: `${PUBLIC_URL}/webhooks/twilio/status?id=${sent.message_id}`,
    });
    mgServer.kill();
  });

  test("PUBLIC_URL with a trailing slash: StatusCallback has no double slash, and webhooks signed for that URL are accepted", async () => {
    const slashed = await startServer({ env: twilioEnv(fake, { PUBLIC_URL: `${PUBLIC_URL}/` }) });
    extraServers.push(slashed);
    const phone = newPhone();
    const before = fake.sends.length;
    const sent = await send(slashed, phone, "slash");
    expect(fake.sends.slice(before).map((r) => r.body.StatusCallback)).toEqual([`${PUBLIC_URL}/webhooks/twilio/status?id=${sent.message_id}`]);
    const params = inboundParams(phone, "signed for the configured URL");
    const reply = await postTwilioWebhook(slashed.url, INBOUND_PATH, params, signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params));
    expect(reply.status).toBe(200);
    expect((await history(slashed, phone)).messages.map((m) => m.message)).toEqual(["signed for the configured URL", "slash"]);
    slashed.kill();
  });
});

describe("inbound SMS: POST /webhooks/twilio, signed by Twilio", () => {
  test("a correctly signed message is answered with empty TwiML (text/xml) and stored: history and poll show it", async () => {
    const phone = newPhone();
    const params = inboundParams(phone, "Hi, is my order ready?");
    const reply = await signed(INBOUND_PATH, params);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type") ?? "").toMatch(/^(text|application)\/xml/);
    expect(reply.text).toMatch(EMPTY_TWIML);

    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { phone, message: "Hi, is my order ready?", direction: "inbound", status: "received" });
    const polled = await poll(server, { phone });
    expect(polled.count).toBe(1);
    expect(polled.messages[0]).toEqual(messages[0]!);
  });

  test("the text is stored exactly, with characters that form encoding and the signature must both get right", async () => {
    const phone = newPhone();
    const text = "¿Qué tal? 😀 a+b=c & d%20e \"quoted\" <tag> línea\nnueva";
    const reply = await signed(INBOUND_PATH, inboundParams(phone, text));
    expect(reply.status).toBe(200);
    const { messages } = await history(server, phone);
    expect(messages.map((m) => m.message)).toEqual([text]);
  });

  test("the same MessageSid twice (Twilio retrying) is stored once, and both deliveries get the TwiML answer", async () => {
    const phone = newPhone();
    const params = inboundParams(phone, "only once please", twilioSid("SM"));
    const first = await signed(INBOUND_PATH, params);
    const second = await signed(INBOUND_PATH, params);
    for (const reply of [first, second]) {
      expect(reply.status).toBe(200);
      expect(reply.text).toMatch(EMPTY_TWIML);
    }
    expect((await history(server, phone)).total).toBe(1);
    expect((await poll(server, { phone })).count).toBe(1);
  });

  const forgeries: [string, (phone: string) => Promise<WebhookReply>][] = [
    [
      "the Body changed after signing",
      (phone) => {
        const params = inboundParams(phone, "pay 10 dollars");
        const signature = signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params);
        return postTwilioWebhook(server.url, INBOUND_PATH, { ...params, Body: "pay 1000 dollars" }, signature);
      },
    ],
    [
      "a parameter added after signing",
      (phone) => {
        const params = inboundParams(phone, "hello");
        const signature = signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params);
        return postTwilioWebhook(server.url, INBOUND_PATH, { ...params, Extra: "x" }, signature);
      },
    ],
    ["signed with another auth token", (phone) => signed(INBOUND_PATH, inboundParams(phone, "hello"), "0".repeat(32))],
    ["no X-Twilio-Signature header", (phone) => postTwilioWebhook(server.url, INBOUND_PATH, inboundParams(phone, "hello"), null)],
    ["an empty X-Twilio-Signature header", (phone) => postTwilioWebhook(server.url, INBOUND_PATH, inboundParams(phone, "hello"), "")],
    [
      "signed for the server's local address instead of PUBLIC_URL",
      (phone) => {
        const params = inboundParams(phone, "hello");
        return postTwilioWebhook(server.url, INBOUND_PATH, params, signTwilioRequest(fake.authToken, server.url + INBOUND_PATH, params));
      },
    ],
    [
      "signed for the status URL but posted to the inbound URL",
      (phone) => {
        const params = inboundParams(phone, "hello");
        return postTwilioWebhook(server.url, INBOUND_PATH, params, signTwilioRequest(fake.authToken, PUBLIC_URL + STATUS_PATH, params));
      },
    ],
  ];

  test.each(forgeries)("refused with 401 JSON and nothing stored: %s", async (_what, forge) => {
    const phone = newPhone();
    const reply = await forge(phone);
    expectError({ ...reply, body: JSON.parse(reply.text || "null") }, 401, "UNAUTHORIZED", [fake.authToken]);
    expect((await history(server, phone)).total).toBe(0);
    expect((await poll(server, { phone })).count).toBe(0);
    // The same phone's correctly signed message is taken: the refusal was for the signature.
    expect((await signed(INBOUND_PATH, inboundParams(phone, "genuine"))).status).toBe(200);
    const { messages } = await history(server, phone);
    expect(messages.map((m) => m.message)).toEqual(["genuine"]);
  });

  test("no API key is needed (Twilio has none): the signature alone admits the request", async () => {
    const phone = newPhone();
    const params = inboundParams(phone, "no bearer");
    const res = await fetch(server.url + INBOUND_PATH, {
      method: "POST",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Twilio-Signature": signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params),
      },
      body: new URLSearchParams(params).toString(),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("www-authenticate")).toBeNull();
    expect((await history(server, phone)).total).toBe(1);
  });
});

describe("status callbacks: POST /webhooks/twilio/status", () => {
  test("`sent` then `delivered` makes the message delivered; a late `sent` after `delivered` leaves it delivered", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "track me");
    expect(await statusOf(phone, result.message_id)).toBe("sent");

    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "sent")), "status sent");
    expect(await statusOf(phone, result.message_id)).toBe("sent");

    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "delivered")), "status delivered");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");

    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "sent")), "late status sent");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "queued")), "late status queued");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: result.message_id, direction: "outbound", status: "delivered", timestamp: result.timestamp });
  });

  test("`undelivered` (with ErrorCode) makes it failed, and a later `delivered` does not change it", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "to a dead phone");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "undelivered", "30003")), "status undelivered");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "delivered")), "late status delivered");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "sent")), "late status sent");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
    expect((await history(server, phone)).total).toBe(1);
  });

  test("`failed` makes it failed and final", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "will fail");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "sent")), "status sent");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "failed", "30008")), "status failed");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "delivered")), "late status delivered");
    expect(await statusOf(phone, result.message_id)).toBe("failed");
  });

  test("a report about one message changes no other message", async () => {
    const phone = newPhone();
    const one = await sendAndSid(phone, "one");
    const two = await sendAndSid(phone, "two");
    expect2xx(await signed(STATUS_PATH, statusParams(one.sid, phone, "delivered")), "status delivered");
    expect(await statusOf(phone, one.result.message_id)).toBe("delivered");
    expect(await statusOf(phone, two.result.message_id)).toBe("sent");
  });

  test("a forged status report (unsigned, wrong token, or status altered after signing) is refused with 401 and changes nothing", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "do not touch");
    const params = statusParams(sid, phone, "delivered");
    const genuineSignature = signTwilioRequest(fake.authToken, PUBLIC_URL + STATUS_PATH, params);
    const attempts: WebhookReply[] = [
      await postTwilioWebhook(server.url, STATUS_PATH, statusParams(sid, phone, "failed"), null),
      await signed(STATUS_PATH, statusParams(sid, phone, "failed"), "f".repeat(32)),
      await postTwilioWebhook(server.url, STATUS_PATH, { ...params, MessageStatus: "failed", SmsStatus: "failed" }, genuineSignature),
    ];
    for (const reply of attempts) {
      expectError({ ...reply, body: JSON.parse(reply.text || "null") }, 401, "UNAUTHORIZED", [fake.authToken]);
    }
    expect(await statusOf(phone, result.message_id)).toBe("sent");
    // The genuine report still applies.
    expect2xx(await postTwilioWebhook(server.url, STATUS_PATH, params, genuineSignature), "genuine status delivered");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");
  });

  test("a report that arrives before Twilio's answer to the send has reached Textwire is not lost", async () => {
    // Twilio may call the StatusCallback as soon as it has the message, while its HTTP answer
    // to the create request is still on its way: the report must still count.
    const phone = newPhone();
    const sid = twilioSid("SM");
    let release!: () => void;
    const answered = new Promise<void>((resolve) => (release = resolve));
    fake.reply(async () => {
      await answered;
      return { kind: "created", sid };
    });
    const before = fake.sends.length;
    const pending = call<SendResult>(server, "POST", "/api/send", { body: { phone, message: "fast carrier" } });
    try {
      await fake.waitForSends(before + 1);
      // Twilio calls the StatusCallback exactly as Textwire gave it, query included (and signed).
      const callback = new URL(String(fake.sends[before]!.body.StatusCallback));
      const path = callback.pathname + callback.search;
      expect(callback.searchParams.get("id")).toBeTruthy();
      expect2xx(await signed(path, statusParams(sid, phone, "sent")), "early status sent");
      expect2xx(await signed(path, statusParams(sid, phone, "delivered")), "early status delivered");
    } finally {
      release();
    }
    const reply = await pending;
    expect(reply.status).toBe(200);
    expect(await statusOf(phone, reply.body.message_id)).toBe("delivered");
  });
});

describe("Twilio's errors on POST /api/send", () => {
  async function sendExpectingError(phone: string, text: string) {
    return call(server, "POST", "/api/send", { body: { phone, message: text } });
  }

  async function expectFailedInHistory(phone: string, text: string): Promise<void> {
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { phone, message: text, direction: "outbound", status: "failed" });
  }

  test("400 with code 21211 (invalid 'To') → 400 BAD_REQUEST whose message carries Twilio's reason; the message is failed in history", async () => {
    const phone = newPhone();
    const twilioMessage = `The 'To' number ${phone} is not a valid phone number.`;
    fake.reply({ kind: "error", httpStatus: 400, code: 21211, message: twilioMessage });
    const reply = await sendExpectingError(phone, "to nowhere");
    const body = expectError(reply, 400, "BAD_REQUEST", [fake.authToken]);
    expect(body.error.message).toContain(twilioMessage);
    await expectFailedInHistory(phone, "to nowhere");
  });

  test("400 with code 21610 (recipient unsubscribed) → 403 FORBIDDEN, the contact opted out; the message is failed with Twilio's reason", async () => {
    const phone = newPhone();
    const twilioMessage = "Attempt to send to unsubscribed recipient";
    fake.reply({ kind: "error", httpStatus: 400, code: 21610, message: twilioMessage });
    const body = expectError(await sendExpectingError(phone, "STOP respected"), 403, "FORBIDDEN", [fake.authToken]);
    expect(body.error.message).toBe("phone: the contact opted out by replying STOP");
    await expectFailedInHistory(phone, "STOP respected");
    expect((await history(server, phone)).messages[0]!.error).toContain(twilioMessage);
    const contact = await call<{ contact: { opted_out: boolean } }>(server, "GET", `/api/contacts/${encodeURIComponent(phone)}`);
    expect(contact.body.contact.opted_out).toBe(true);
  });

  test("429 with code 20429 (Too Many Requests) → 429 TOO_MANY_REQUESTS with a Retry-After; the message is failed in history", async () => {
    const phone = newPhone();
    fake.reply({ kind: "error", httpStatus: 429, code: 20429, message: "Too Many Requests" });
    const reply = await sendExpectingError(phone, "slow down");
    expectError(reply, 429, "TOO_MANY_REQUESTS", [fake.authToken]);
    expect(reply.headers.get("retry-after") ?? "").toMatch(/^[1-9]\d*$/);
    await expectFailedInHistory(phone, "slow down");
  });

  test.each([500, 503])("%i from Twilio → 502 BAD_GATEWAY; the message is failed in history", async (status) => {
    const phone = newPhone();
    fake.reply({ kind: "error", httpStatus: status, code: 20500, message: "Internal Server Error" });
    expectError(await sendExpectingError(phone, `upstream ${status}`), 502, "BAD_GATEWAY", [fake.authToken]);
    await expectFailedInHistory(phone, `upstream ${status}`);
  });

  test("a 503 HTML page from a proxy in front of Twilio → 502 BAD_GATEWAY", async () => {
    const phone = newPhone();
    fake.reply({ kind: "raw", httpStatus: 503, body: "<html><body>Service Unavailable</body></html>", contentType: "text/html" });
    expectError(await sendExpectingError(phone, "html error"), 502, "BAD_GATEWAY", [fake.authToken]);
    await expectFailedInHistory(phone, "html error");
  });

  test("Twilio unreachable (nothing listening at TWILIO_API_URL) → 502 BAD_GATEWAY; the message is failed in history", async () => {
    const closed = startFakeTwilio({ accountSid: fake.accountSid, authToken: fake.authToken });
    const closedUrl = closed.url;
    await closed.stop();
    const down = await startServer({ env: twilioEnv(fake, { TWILIO_API_URL: closedUrl }) });
    extraServers.push(down);
    const phone = newPhone();
    const reply = await call(down, "POST", "/api/send", { body: { phone, message: "into the void" } });
    expectError(reply, 502, "BAD_GATEWAY", [fake.authToken]);
    const { messages, total } = await history(down, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { phone, message: "into the void", direction: "outbound", status: "failed" });
    down.kill();
  });

  test("Twilio refusing Textwire's credentials (401, code 20003) → 502 BAD_GATEWAY, and the token is never echoed", async () => {
    const wrongToken = "wrongtoken" + "9".repeat(22);
    const misconfigured = await startServer({ env: twilioEnv(fake, { TWILIO_AUTH_TOKEN: wrongToken }) });
    extraServers.push(misconfigured);
    const phone = newPhone();
    const reply = await call(misconfigured, "POST", "/api/send", { body: { phone, message: "bad creds" } });
    expectError(reply, 502, "BAD_GATEWAY", [wrongToken, fake.authToken]);
    const { messages } = await history(misconfigured, phone);
    expect(messages.map((m) => m.status)).toEqual(["failed"]);
    misconfigured.kill();
  });
});

describe("a send whose outcome is unknown (docs/networks.md)", () => {
  test("no answer within TWILIO_SEND_TIMEOUT_MS → 504 with message_id; stays queued; a retry with its key sends nothing; the status callback settles it", async () => {
    const slow = await startServer({ env: twilioEnv(fake, { TWILIO_SEND_TIMEOUT_MS: "1000" }) });
    extraServers.push(slow);
    // Twilio takes the message but answers only after Textwire stopped waiting.
    fake.reply(async () => {
      await Bun.sleep(2_500);
      return { kind: "created" };
    });
    const phone = newPhone();
    const body = { phone, message: "slow answer" };
    const headers = { "Idempotency-Key": `slow-${phone}` };
    const before = fake.sends.length;
    const first = await call<{ success: false; error: { code: string; message_id?: string } }>(slow, "POST", "/api/send", { body, headers });
    expectError(first, 504, "GATEWAY_TIMEOUT", [fake.authToken]);
    const id = first.body.error.message_id!;
    expect(id).toMatch(/\S/);
    const queued = (await history(slow, phone)).messages;
    expect(queued.map((m) => [m.id, m.status])).toEqual([[id, "queued"]]);

    const retry = await call<{ success: false; error: { code: string; message_id?: string } }>(slow, "POST", "/api/send", { body, headers });
    expect(retry.status).toBe(504);
    expect(retry.body.error.message_id).toBe(id);
    await Bun.sleep(2_000); // the first request's late answer has come and gone
    expect(fake.sends.length).toBe(before + 1);

    // Twilio's report, with our id in the callback URL, settles it.
    const params = statusParams(fake.sids.at(-1)!, phone, "delivered");
    const path = `${STATUS_PATH}?id=${encodeURIComponent(id)}`;
    expect2xx(await postTwilioWebhook(slow.url, path, params, signTwilioRequest(fake.authToken, PUBLIC_URL + path, params)), "status callback");
    expect((await history(slow, phone)).messages.map((m) => m.status)).toEqual(["delivered"]);
    const settled = await call<SendResult>(slow, "POST", "/api/send", { body, headers });
    expect(settled.status).toBe(200);
    expect(settled.body.message_id).toBe(id);
    expect(fake.sends.length).toBe(before + 1);
    slow.kill();
  });

  test("Twilio answers 201 but the answer is cut → 504 with message_id, never failed, never sent twice", async () => {
    fake.reply({ kind: "raw", httpStatus: 201, body: '{"sid": "SM', contentType: "application/json" });
    const phone = newPhone();
    const headers = { "Idempotency-Key": `cut-${phone}` };
    const before = fake.sends.length;
    const reply = await call<{ success: false; error: { code: string; message_id?: string } }>(server, "POST", "/api/send", { body: { phone, message: "cut answer" }, headers });
    expectError(reply, 504, "GATEWAY_TIMEOUT", [fake.authToken]);
    expect((await history(server, phone)).messages.map((m) => [m.id, m.status])).toEqual([[reply.body.error.message_id!, "queued"]]);
    fake.reply({ kind: "created" });
    const retry = await call(server, "POST", "/api/send", { body: { phone, message: "cut answer" }, headers });
    expect(retry.status).toBe(504);
    expect(fake.sends.length).toBe(before + 1);
  });
});

describe("start-up without the Twilio settings", () => {
  const required = ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM", "PUBLIC_URL"] as const;

  test.each(required)("NETWORK=twilio without %s exits non-zero with one line naming it", async (name) => {
    const child = await spawnServer({ env: twilioEnv(fake, { [name]: undefined }) });
    const code = await child.exited();
    expect(code).not.toBe(0);
    expect(child.stdout).not.toMatch(/listening on/);
    const errLines = lines(child.stderr);
    expect(errLines).toHaveLength(1);
    expect(errLines[0]!).toContain(name);
    expect(child.stderr).not.toContain(fake.authToken);
  });

  test.each([
    ["TWILIO_ACCOUNT_SID", "AC123"],
    ["TWILIO_FROM", "not-a-number"],
    ["PUBLIC_URL", "textwire.example.com without scheme"],
  ])("NETWORK=twilio with a malformed %s exits non-zero with one line naming it", async (name, value) => {
    const child = await spawnServer({ env: twilioEnv(fake, { [name]: value }) });
    const code = await child.exited();
    expect(code).not.toBe(0);
    const errLines = lines(child.stderr);
    expect(errLines).toHaveLength(1);
    expect(errLines[0]!).toContain(name);
    expect(child.stderr).not.toContain(fake.authToken);
  });
});

describe("signature URL forms, as the official twilio SDK signs and validates them", () => {
  // Twilio signs the URL it called; a proxy may add or strip the default port, so every form
  // the SDK's validateRequest accepts is accepted, and each test cross-checks with it.
  const forms = (base: string, path: string) => [base + path, base.replace(/^(https?:\/\/[^/]+)/, (h) => h + (h.startsWith("https") ? ":443" : ":80")) + path];

  test("an inbound webhook signed over PUBLIC_URL with or without :443 is accepted and stored once per message", async () => {
    const phone = newPhone();
    const texts: string[] = [];
    for (const url of forms(PUBLIC_URL, INBOUND_PATH)) {
      const text = `signed over ${url}`;
      const params = inboundParams(phone, text);
      const signature = getExpectedTwilioSignature(fake.authToken, url, params);
      expect(validateRequest(fake.authToken, signature, PUBLIC_URL + INBOUND_PATH, params)).toBe(true);
      expect(signature).toBe(signTwilioRequest(fake.authToken, url, params));
      const reply = await postTwilioWebhook(server.url, INBOUND_PATH, params, signature);
      expect(reply.status).toBe(200);
      texts.push(text);
    }
    expect((await history(server, phone)).messages.map((m) => m.message).sort()).toEqual(texts.sort());
  });

  test("a status callback signed over its URL (with ?id=) with :443 is applied", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "port on the callback");
    const url = `${PUBLIC_URL.replace("example.com", "example.com:443")}${STATUS_PATH}?id=${result.message_id}`;
    const params = statusParams(sid, phone, "delivered");
    const signature = getExpectedTwilioSignature(fake.authToken, url, params);
    expect(validateRequest(fake.authToken, signature, `${PUBLIC_URL}${STATUS_PATH}?id=${result.message_id}`, params)).toBe(true);
    expect2xx(await postTwilioWebhook(server.url, `${STATUS_PATH}?id=${result.message_id}`, params, signature), "status with port");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");
  });

  test("PUBLIC_URL configured with :443 (or http with :80) accepts signatures over the URL without the port, and with it", async () => {
    for (const base of ["https://textwire.example.com:443", "http://textwire.example.com:80"]) {
      const ported = await startServer({ env: twilioEnv(fake, { PUBLIC_URL: base }) });
      extraServers.push(ported);
      const phone = newPhone();
      const bare = base.replace(/:(443|80)$/, "");
      for (const url of [bare + INBOUND_PATH, base + INBOUND_PATH]) {
        const params = inboundParams(phone, `to ${base} signed over ${url}`);
        const signature = getExpectedTwilioSignature(fake.authToken, url, params);
        expect(validateRequest(fake.authToken, signature, base + INBOUND_PATH, params)).toBe(true);
        expect((await postTwilioWebhook(ported.url, INBOUND_PATH, params, signature)).status).toBe(200);
      }
      expect((await history(ported, phone)).total).toBe(2);
      ported.kill();
    }
  });

  test("repeated parameters are signed as the SDK sorts them (distinct values, sorted) and accepted", async () => {
    const phone = newPhone();
    const params: Record<string, string | string[]> = { ...inboundParams(phone, "with repeated fields"), Tag: ["zeta", "alpha", "zeta", "Mid"] };
    const signature = getExpectedTwilioSignature(fake.authToken, PUBLIC_URL + INBOUND_PATH, params);
    expect(validateRequest(fake.authToken, signature, PUBLIC_URL + INBOUND_PATH, params)).toBe(true);
    expect(signature).toBe(signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params));
    expect((await postTwilioWebhook(server.url, INBOUND_PATH, params, signature)).status).toBe(200);
    expect((await history(server, phone)).messages.map((m) => m.message)).toEqual(["with repeated fields"]);
  });

  test("a signature over another host, path or port is refused with 401, as validateRequest refuses it", async () => {
    const phone = newPhone();
    for (const url of ["https://evil.example.com" + INBOUND_PATH, PUBLIC_URL + "/webhooks/other", "https://textwire.example.com:8443" + INBOUND_PATH]) {
      const params = inboundParams(phone, `forged over ${url}`);
      const signature = getExpectedTwilioSignature(fake.authToken, url, params);
      expect(validateRequest(fake.authToken, signature, PUBLIC_URL + INBOUND_PATH, params)).toBe(false);
      expect((await postTwilioWebhook(server.url, INBOUND_PATH, params, signature)).status).toBe(401);
    }
    expect((await history(server, phone)).total).toBe(0);
  });
});

describe("partially_delivered and OptOutType", () => {
  test("`partially_delivered` makes the message delivered (final), noting the partial delivery in its error", async () => {
    const phone = newPhone();
    const { result, sid } = await sendAndSid(phone, "a long text in many segments");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "partially_delivered")), "status partially_delivered");
    const { messages } = await history(server, phone);
    expect(messages[0]!.status).toBe("delivered");
    expect(messages[0]!.error).toContain("partially delivered");
    expect2xx(await signed(STATUS_PATH, statusParams(sid, phone, "undelivered", "30003")), "late undelivered");
    expect(await statusOf(phone, result.message_id)).toBe("delivered");
  });

  test("OptOutType (STOP, START, HELP) from an inbound webhook is stored with the message; absent or unknown, null", async () => {
    const phone = newPhone();
    const cases: [string, string | undefined][] = [["STOP", "STOP"], ["start", "START"], ["HELP", "HELP"], ["hello", undefined], ["OTHER", "MAYBE"]];
    const sids: string[] = [];
    for (const [text, type] of cases) {
      const sid = twilioSid("SM");
      sids.push(sid);
      const params = { ...inboundParams(phone, text, sid), ...(type ? { OptOutType: type } : {}) };
      expect2xx(await signed(INBOUND_PATH, params), `inbound ${text}`);
    }
    expect((await history(server, phone)).total).toBe(cases.length);
    const rows = await server.db.query<{ sid: string; type: string | null }>(
      "SELECT network_id AS sid, opt_out_type AS type FROM messages WHERE phone = ? AND direction = 'inbound'",
      phone,
    );
    const bySid = Object.fromEntries(rows.map((r) => [r.sid, r.type]));
    expect(sids.map((sid) => bySid[sid])).toEqual(["STOP", "START", "HELP", null, null]);
  });
});

describe("inbound text passes the rules of a sent message", () => {
  test("control characters other than tab, LF and CR are removed; tab, LF and CR stay", async () => {
    const phone = newPhone();
    const reply = await signed(INBOUND_PATH, inboundParams(phone, "Hi\u0007 there\u0000!\tok\r\nnext\u001b[0m\u0085"));
    expect(reply.status).toBe(200);
    expect(reply.text).toMatch(EMPTY_TWIML);
    expect((await history(server, phone)).messages.map((m) => m.message)).toEqual(["Hi there!\tok\r\nnext[0m"]);
    // The server logs it before it answers; its output reaches this process a little later.
    await waitFor("the log line", 5_000, () => server.stdout.includes("inbound text cleaned to the message rules"), () => server.stdout);
  });

  test("a text with nothing readable left is answered (Twilio does not resend) and not stored", async () => {
    const phone = newPhone();
    const reply = await signed(INBOUND_PATH, inboundParams(phone, "\u0001\u0002 \u0003"));
    expect(reply.status).toBe(200);
    expect((await history(server, phone)).total).toBe(0);
  });

  test("a text over MAX_MESSAGE_LENGTH code points keeps its first MAX-1 and ends with …, within the limit", async () => {
    const short = await startServer({ env: twilioEnv(fake, { MAX_MESSAGE_LENGTH: "10" }) });
    extraServers.push(short);
    const phone = newPhone();
    const text = "😀bcdefghijklmnop";
    const params = inboundParams(phone, text);
    const reply = await postTwilioWebhook(short.url, INBOUND_PATH, params, signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, params));
    expect(reply.status).toBe(200);
    const stored = (await history(short, phone)).messages.map((m) => m.message);
    expect(stored).toEqual(["😀bcdefghi…"]);
    expect([...stored[0]!]).toHaveLength(10);
    // Exactly at the limit: stored as received.
    const exact = inboundParams(phone, "😀bcdefghij");
    expect((await postTwilioWebhook(short.url, INBOUND_PATH, exact, signTwilioRequest(fake.authToken, PUBLIC_URL + INBOUND_PATH, exact))).status).toBe(200);
    expect((await history(short, phone)).messages.map((m) => m.message)).toEqual(["😀bcdefghij", "😀bcdefghi…"]);
    short.kill();
  });
});

describe("secrets stay out of the logs", () => {
  test("after every test above, the server's output never held the auth token", () => {
    expect(server.stdout + server.stderr).not.toContain(fake.authToken);
    for (const s of extraServers) expect(s.stdout + s.stderr).not.toContain(fake.authToken);
  });
});
