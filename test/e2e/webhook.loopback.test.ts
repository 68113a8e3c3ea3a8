// POST /webhooks/loopback stores inbound messages; the network's own `id` makes a
// redelivery store nothing new (docs/api.md "Inbound messages", docs/networks.md).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectBadField, expectError, expectRecord, expectSendResult, history, inbound, newPhone, poll, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

describe("an inbound message", () => {
  test("is answered like a send and stored as inbound, received, with that id and timestamp", async () => {
    const phone = newPhone();
    const r = await inbound(server, phone, "Is my order on its way?");
    expectSendResult(r);
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expectRecord(messages[0]!, { id: r.message_id, phone, message: "Is my order on its way?", direction: "inbound", status: "received", timestamp: r.timestamp });
  });

  test("without an id, each delivery is a new message", async () => {
    const phone = newPhone();
    const a = await inbound(server, phone, "same text");
    const b = await inbound(server, phone, "same text");
    expect(a.message_id).not.toBe(b.message_id);
    expect((await history(server, phone)).total).toBe(2);
  });

  test("the same network id twice: the same message_id and timestamp, stored once", async () => {
    const phone = newPhone();
    const id = `net-${crypto.randomUUID()}`;
    const first = await inbound(server, phone, "hello", id);
    const again = await inbound(server, phone, "hello", id);
    expect(again.message_id).toBe(first.message_id);
    expect(again.timestamp).toBe(first.timestamp);
    expect((await history(server, phone)).total).toBe(1);
    expect((await poll(server, { phone })).count).toBe(1);
  });

  test("the same network id delivered 10 times at once is stored once", async () => {
    const phone = newPhone();
    const id = `net-${crypto.randomUUID()}`;
    const replies = await Promise.all(
      Array.from({ length: 10 }, () => call<SendResult>(server, "POST", "/webhooks/loopback", { body: { phone, message: "racing", id } })),
    );
    for (const r of replies) expect(r.status).toBe(200);
    expect(new Set(replies.map((r) => r.body.message_id)).size).toBe(1);
    expect((await history(server, phone)).total).toBe(1);
  });

  test("different network ids are different messages", async () => {
    const phone = newPhone();
    const a = await inbound(server, phone, "one", `net-${crypto.randomUUID()}`);
    const b = await inbound(server, phone, "two", `net-${crypto.randomUUID()}`);
    expect(a.message_id).not.toBe(b.message_id);
    expect((await history(server, phone)).total).toBe(2);
  });

  test("a malformed phone is 400 naming phone", async () => {
    expectBadField(await call(server, "POST", "/webhooks/loopback", { body: { phone: "4155550123", message: "hi" } }), "phone", [server.apiKey]);
  });

  for (const [why, message] of [
    ["empty", ""],
    ["whitespace only", "  \n "],
    ["a control character", "hi\u0000"],
  ] as const) {
    test(`a message that is ${why} is 400 naming message, stored nothing`, async () => {
      const phone = newPhone();
      expectBadField(await call(server, "POST", "/webhooks/loopback", { body: { phone, message } }), "message");
      expect((await history(server, phone)).total).toBe(0);
    });
  }
});

describe("on another network (NETWORK=twilio) the loopback webhook does not exist", () => {
  let twilio: Server;
  beforeAll(async () => {
    // Nothing is sent here: the Twilio settings only have to be well-formed.
    twilio = await startServer({
      env: {
        NETWORK: "twilio",
        TWILIO_API_URL: "http://127.0.0.1:9",
        TWILIO_ACCOUNT_SID: "AC" + "0".repeat(32),
        TWILIO_AUTH_TOKEN: "token",
        TWILIO_FROM: "+14155550100",
        PUBLIC_URL: "https://textwire.example.com",
      },
    });
  }, 60_000);
  afterAll(() => twilio?.kill());

  test("POST /webhooks/loopback with a valid key: 404, nothing stored", async () => {
    const phone = newPhone();
    expectError(await call(twilio, "POST", "/webhooks/loopback", { body: { phone, message: "forged" } }), 404, "NOT_FOUND", [twilio.apiKey]);
    expect((await history(twilio, phone)).total).toBe(0);
  });

  test("nor through tRPC (webhooks.loopback): NOT_FOUND, nothing stored", async () => {
    const phone = newPhone();
    const reply = await call<{ error?: { data?: { code?: string } } }>(twilio, "POST", "/trpc/webhooks.loopback", { body: { phone, message: "forged" } });
    expect(reply.status).toBe(404);
    expect(reply.body.error?.data?.code).toBe("NOT_FOUND");
    expect((await history(twilio, phone)).total).toBe(0);
  });

  test("nor in the OpenAPI document; the network's own webhook is", async () => {
    const doc = (await call<{ paths: Record<string, unknown> }>(twilio, "GET", "/openapi.json", { key: null })).body;
    expect(Object.keys(doc.paths)).not.toContain("/webhooks/loopback");
    expect(Object.keys(doc.paths)).toContain("/webhooks/twilio");
  });
});
