// POST /api/send accepts well-formed messages, stores them exactly, and answers with
// the stored record's id and timestamp (docs/api.md).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectRecord, expectSendResult, expectStrictlyIncreasing, history, inbound, newPhone, send, URL_SAFE, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
beforeAll(async () => {
  server = await startServer();
}, 60_000);
afterAll(() => server?.kill());

describe("a sent message", () => {
  test("answers success with a URL-safe id and an ISO 8601 UTC timestamp with milliseconds", async () => {
    const result = await send(server, newPhone(), "Your order has shipped");
    expectSendResult(result);
  });

  test("is stored as outbound and delivered on the loopback network, with the id and timestamp it was answered with", async () => {
    const phone = newPhone();
    const result = await send(server, phone, "Hello there");
    const { messages, total } = await history(server, phone);
    expect(total).toBe(1);
    expect(messages).toHaveLength(1);
    expectRecord(messages[0]!, {
      id: result.message_id,
      phone,
      message: "Hello there",
      direction: "outbound",
      status: "delivered",
      timestamp: result.timestamp,
    });
  });

  test("keeps its text exactly: emoji, combining marks, other scripts, quotes, tab, LF and CR", async () => {
    const phone = newPhone();
    const texts = [
      "Emoji 😀👍🏽 and 🇺🇸 flags",
      "Cafe\u0301 vs Café",
      "مرحبا بالعالم — こんにちは — Привет",
      `quotes " ' \` and backslash \\ and <b>html</b> & 'sql'; DROP TABLE messages; --`,
      "tab\there\nnew line\r\ncarriage return",
    ];
    const ids: string[] = [];
    for (const text of texts) ids.push((await send(server, phone, text)).message_id);
    const { messages } = await history(server, phone);
    const byId = new Map(messages.map((m) => [m.id, m.message]));
    texts.forEach((text, i) => expect(byId.get(ids[i]!)).toBe(text));
  });

  test("accepts Content-Type application/json with a charset parameter", async () => {
    const reply = await call<SendResult>(server, "POST", "/api/send", {
      raw: JSON.stringify({ phone: newPhone(), message: "charset" }),
      headers: { "content-type": "application/json; charset=utf-8" },
    });
    expect(reply.status).toBe(200);
    expectSendResult(reply.body);
  });

  test("accepts possible E.164 numbers of many countries and lengths (7 to 15 digits)", async () => {
    const phones = [
      "+6834002", // Niue, 7 digits
      "+447911123456", // UK mobile
      "+33612345678", // France
      "+4915112345678", // Germany, 13 digits
      "+491511234567890", // Germany, 15 digits
      "+5511987654321", // Brazil
      "+8613812345678", // China
      "+61412345678", // Australia
    ];
    for (const phone of phones) {
      const reply = await call<SendResult>(server, "POST", "/api/send", { body: { phone, message: `hi ${phone}` } });
      if (reply.status !== 200) throw new Error(`${phone} refused: ${reply.status} ${reply.text}`);
      const { messages } = await history(server, phone);
      expect(messages.map((m) => m.phone)).toContain(phone);
    }
  });
});

describe("ids and timestamps", () => {
  test("ids of 60 concurrent sends are unique and URL-safe, and their timestamps all differ", async () => {
    const phone = newPhone();
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => send(server, phone, `burst ${i}`)));
    for (const r of results) expectSendResult(r);
    expect(new Set(results.map((r) => r.message_id)).size).toBe(60);
    expect(new Set(results.map((r) => r.timestamp)).size).toBe(60);
    for (const r of results) expect(r.message_id).toMatch(URL_SAFE);
  });

  test("each stored message's timestamp is strictly after the one stored before it, outbound and inbound alike", async () => {
    const phone = newPhone();
    const stamps: string[] = [];
    for (let i = 0; i < 15; i++) {
      const r = i % 3 === 0 ? await inbound(server, phone, `in ${i}`) : await send(server, phone, `out ${i}`);
      stamps.push(r.timestamp);
    }
    expectStrictlyIncreasing(stamps);
  });

  test("concurrent sends and inbound messages get distinct timestamps, and history orders them by timestamp", async () => {
    const phone = newPhone();
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? send(server, phone, `o${i}`) : inbound(server, phone, `i${i}`))),
    );
    const { messages, total } = await history(server, phone, "limit=100");
    expect(total).toBe(40);
    expect(new Set(messages.map((m) => m.timestamp)).size).toBe(40);
    expectStrictlyIncreasing(messages.map((m) => m.timestamp).reverse());
    const answered = new Map(results.map((r) => [r.message_id, r.timestamp]));
    for (const m of messages) expect(answered.get(m.id)).toBe(m.timestamp);
  });

  test("a message sent later has a later timestamp than every message before it, and at or after the wall clock", async () => {
    const before = Date.now();
    const r = await send(server, newPhone(), "clock");
    const after = Date.now();
    const at = Date.parse(r.timestamp);
    // The server's clock is this machine's clock; it may run ahead to keep timestamps unique, never behind.
    expect(at).toBeGreaterThanOrEqual(before);
    expect(at).toBeLessThan(after + 60_000);
  });
});
