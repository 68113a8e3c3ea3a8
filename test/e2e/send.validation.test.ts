// POST /api/send refuses malformed phones and messages with 400 naming the field, and
// stores nothing for them (docs/api.md POST /api/send).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { isPossiblePhoneNumber } from "libphonenumber-js";
import { call, expectBadField, history, inbound, newPhone, send } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
let short: Server; // MAX_MESSAGE_LENGTH=10
beforeAll(async () => {
  [server, short] = await Promise.all([startServer(), startServer({ env: { MAX_MESSAGE_LENGTH: "10" } })]);
}, 60_000);
afterAll(() => {
  server?.kill();
  short?.kill();
});

const sendRaw = (s: Server, body: unknown) => call(s, "POST", "/api/send", { body });

describe("phone must be E.164: '+', 7 to 15 digits, first digit not 0, possible for its country", () => {
  const bad: [string, string][] = [
    ["no plus sign", "14155550123"],
    ["spaces", "+1 415 555 0123"],
    ["dashes", "+1-415-555-0123"],
    ["parentheses", "+1(415)5550123"],
    ["dots", "+1.415.555.0123"],
    ["leading space", " +14155550123"],
    ["trailing space", "+14155550123 "],
    ["trailing newline", "+14155550123\n"],
    ["leading 0 after +", "+04155550123"],
    ["6 digits", "+123456"],
    ["16 digits", "+4915112345678901"],
    ["17 digits that libphonenumber calls possible", "+49151123456789012"],
    ["too short for the US", "+1415555012"],
    ["too long for the US", "+141555501234"],
    ["no such country code", "+999123456789"],
    ["a letter", "+1415555012a"],
    ["two plus signs", "++14155550123"],
    ["plus alone", "+"],
    ["empty", ""],
    ["full-width digits", "+１４１５５５５０１２３"],
  ];

  test("the cases are what they claim (checked against libphonenumber-js)", () => {
    const claimedPossible = new Set(["+49151123456789012", "+4915112345678901", "+１４１５５５５０１２３"]);
    for (const [, phone] of bad) {
      if (!claimedPossible.has(phone) && phone.trim() === phone && /^\+\d+$/.test(phone)) {
        expect(isPossiblePhoneNumber(phone)).toBe(false);
      }
    }
  });

  for (const [why, phone] of bad) {
    test(`400 naming phone: ${why} (${JSON.stringify(phone)})`, async () => {
      expectBadField(await sendRaw(server, { phone, message: "hello" }), "phone", [server.apiKey]);
    });
  }

  const wrongTypes: [string, unknown][] = [
    ["a number", 14155550123],
    ["null", null],
    ["an array", ["+14155550123"]],
    ["an object", { number: "+14155550123" }],
  ];
  for (const [why, phone] of wrongTypes) {
    test(`400 naming phone: phone is ${why}`, async () => {
      expectBadField(await sendRaw(server, { phone, message: "hello" }), "phone");
    });
  }

  test("400 naming phone when phone is missing", async () => {
    expectBadField(await sendRaw(server, { message: "hello" }), "phone");
  });
});

describe("message: 1 to MAX_MESSAGE_LENGTH code points, not only whitespace, no control characters but tab, LF, CR", () => {
  const bad: [string, string][] = [
    ["empty", ""],
    ["a space", " "],
    ["spaces, tabs and newlines only", " \t\r\n \n"],
    ["Unicode spaces only (NBSP, em space, ideographic space)", "\u00a0\u2003\u3000"],
    ["NUL", "hi\u0000there"],
    ["BEL", "hi\u0007"],
    ["ESC (terminal escape)", "\u001b[31mred"],
    ["vertical tab", "a\u000bb"],
    ["form feed", "a\u000cb"],
    ["DEL", "a\u007fb"],
    ["C1 control (CSI)", "a\u009bb"],
  ];
  for (const [why, message] of bad) {
    test(`400 naming message: ${why}`, async () => {
      const phone = newPhone();
      expectBadField(await sendRaw(server, { phone, message }), "message", [server.apiKey]);
      expect((await history(server, phone)).total).toBe(0);
    });
  }

  const wrongTypes: [string, unknown][] = [
    ["a number", 42],
    ["null", null],
    ["a boolean", true],
    ["an array", ["hi"]],
  ];
  for (const [why, message] of wrongTypes) {
    test(`400 naming message: message is ${why}`, async () => {
      expectBadField(await sendRaw(server, { phone: newPhone(), message }), "message");
    });
  }

  test("400 naming message when message is missing", async () => {
    expectBadField(await sendRaw(server, { phone: newPhone() }), "message");
  });

  test("tab, LF and CR inside text are accepted", async () => {
    const reply = await sendRaw(server, { phone: newPhone(), message: "a\tb\nc\rd\r\n" });
    expect(reply.status).toBe(200);
  });

  test("the default limit is 10000 code points: 10000 accepted, 10001 refused", async () => {
    const phone = newPhone();
    expect((await sendRaw(server, { phone, message: "x".repeat(10_000) })).status).toBe(200);
    expectBadField(await sendRaw(server, { phone, message: "x".repeat(10_001) }), "message");
    expect((await history(server, phone)).total).toBe(1);
  });

  describe("with MAX_MESSAGE_LENGTH=10, length is counted in code points", () => {
    test("10 emoji (20 UTF-16 units) are accepted and stored whole", async () => {
      const phone = newPhone();
      const message = "😀".repeat(10);
      expect(message.length).toBe(20);
      const r = await send(short, phone, message);
      const { messages } = await history(short, phone);
      expect(messages[0]).toMatchObject({ id: r.message_id, message });
    });

    test("11 emoji are refused", async () => {
      expectBadField(await sendRaw(short, { phone: newPhone(), message: "😀".repeat(11) }), "message");
    });

    test("10 ASCII characters are accepted, 11 refused", async () => {
      const phone = newPhone();
      expect((await sendRaw(short, { phone, message: "abcdefghij" })).status).toBe(200);
      expectBadField(await sendRaw(short, { phone, message: "abcdefghijk" }), "message");
    });

    test("a combining mark counts as its own code point: 5 × 'e\\u0301' accepted, plus one more refused", async () => {
      const phone = newPhone();
      const five = "e\u0301".repeat(5);
      expect((await sendRaw(short, { phone, message: five })).status).toBe(200);
      expectBadField(await sendRaw(short, { phone, message: five + "a" }), "message");
    });

    test("the inbound webhook applies the same limit", async () => {
      const phone = newPhone();
      await inbound(short, phone, "🙂".repeat(10));
      const reply = await call(short, "POST", "/webhooks/loopback", { body: { phone, message: "🙂".repeat(11) } });
      expectBadField(reply, "message");
      expect((await history(short, phone)).total).toBe(1);
    });
  });
});
