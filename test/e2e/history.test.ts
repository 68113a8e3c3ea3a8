// GET /api/messages/:phone: every message with one phone, newest first, a limit/offset
// window, a total of all of them (docs/api.md GET /api/messages/:phone).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectBadField, expectRecord, history, inbound, micros, newPhone, send, type HistoryResult, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

let server: Server;
// A conversation of 7 messages, oldest first, alternating outbound and inbound.
const talk = { phone: "", sent: [] as (SendResult & { direction: "outbound" | "inbound"; message: string })[] };
// 105 inbound messages from one phone, to see the default and maximum limit at work.
let crowded = "";

beforeAll(async () => {
  server = await startServer();
  talk.phone = newPhone();
  const other = newPhone();
  for (let i = 0; i < 7; i++) {
    const message = `turn ${i}`;
    const outbound = i % 2 === 0;
    const r = outbound ? await send(server, talk.phone, message) : await inbound(server, talk.phone, message);
    talk.sent.push({ ...r, direction: outbound ? ("outbound" as const) : ("inbound" as const), message });
    await send(server, other, `noise ${i}`); // another phone's messages, interleaved
  }
  crowded = newPhone();
  for (let batch = 0; batch < 7; batch++) {
    await Promise.all(Array.from({ length: 15 }, (_, i) => inbound(server, crowded, `crowd ${batch * 15 + i}`)));
  }
}, 60_000);
afterAll(() => server?.kill());

const newestFirst = () => [...talk.sent].reverse();

describe("order and content", () => {
  test("returns every message of the phone, newest first, with total, limit 50 and offset 0 by default", async () => {
    const res = await history(server, talk.phone);
    expect(res.success).toBe(true);
    expect(res.total).toBe(7);
    expect(res.limit).toBe(50);
    expect(res.offset).toBe(0);
    expect(res.messages.map((m) => m.id)).toEqual(newestFirst().map((s) => s.message_id));
    res.messages.forEach((m, i) => {
      const s = newestFirst()[i]!;
      expectRecord(m, {
        phone: talk.phone,
        message: s.message,
        direction: s.direction,
        status: s.direction === "outbound" ? "delivered" : "received",
        timestamp: s.timestamp,
      });
    });
  });

  test("never includes another phone's messages", async () => {
    const res = await history(server, talk.phone);
    for (const m of res.messages) expect(m.phone).toBe(talk.phone);
    expect(res.messages.some((m) => m.message.startsWith("noise"))).toBe(false);
  });

  test("timestamps strictly decrease down the list", async () => {
    const res = await history(server, crowded, "limit=100");
    const us = res.messages.map((m) => micros(m.timestamp));
    for (let i = 1; i < us.length; i++) expect(us[i]!).toBeLessThan(us[i - 1]!);
  });
});

describe("the limit/offset window", () => {
  test("limit=2&offset=1 gives the second and third newest; total still counts all 7", async () => {
    const res = await history(server, talk.phone, "limit=2&offset=1");
    expect(res).toMatchObject({ success: true, total: 7, limit: 2, offset: 1 });
    expect(res.messages.map((m) => m.id)).toEqual(newestFirst().slice(1, 3).map((s) => s.message_id));
  });

  test("paging with limit=3 visits every message once, in order", async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 9; offset += 3) {
      const res = await history(server, talk.phone, `limit=3&offset=${offset}`);
      expect(res.total).toBe(7);
      seen.push(...res.messages.map((m) => m.id));
    }
    expect(seen).toEqual(newestFirst().map((s) => s.message_id));
  });

  test("an offset past the end gives no messages and the full total", async () => {
    const res = await history(server, talk.phone, "offset=7");
    expect(res).toMatchObject({ success: true, messages: [], total: 7, offset: 7 });
  });

  test("the default limit is 50", async () => {
    const res = await history(server, crowded);
    expect(res.messages).toHaveLength(50);
    expect(res.total).toBe(105);
    expect(res.limit).toBe(50);
  });

  test("limit=100 gives 100", async () => {
    const res = await history(server, crowded, "limit=100");
    expect(res.messages).toHaveLength(100);
    expect(res.limit).toBe(100);
  });

  for (const limit of ["101", "1000", "99999999"]) {
    test(`limit=${limit} is clamped to 100 and the response says 100`, async () => {
      const res = await history(server, crowded, `limit=${limit}`);
      expect(res.messages).toHaveLength(100);
      expect(res.limit).toBe(100);
      expect(res.total).toBe(105);
    });
  }

  test("limit=1 and offset=0 given explicitly are applied", async () => {
    const res = await history(server, talk.phone, "limit=1&offset=0");
    expect(res).toMatchObject({ limit: 1, offset: 0, total: 7 });
    expect(res.messages.map((m) => m.id)).toEqual([talk.sent[6]!.message_id]);
  });
});

describe("bad query values are 400 naming the parameter", () => {
  for (const limit of ["0", "-1", "abc", "", "1.5", "10abc"]) {
    test(`limit=${JSON.stringify(limit)}`, async () => {
      const reply = await call(server, "GET", `/api/messages/${encodeURIComponent(talk.phone)}?limit=${limit}`);
      expectBadField(reply, "limit", [server.apiKey]);
    });
  }
  for (const offset of ["-1", "abc", "1.5", ""]) {
    test(`offset=${JSON.stringify(offset)}`, async () => {
      const reply = await call(server, "GET", `/api/messages/${encodeURIComponent(talk.phone)}?offset=${offset}`);
      expectBadField(reply, "offset", [server.apiKey]);
    });
  }
});

describe("the phone in the path", () => {
  test("raw '+' and percent-encoded '%2B' find the same messages", async () => {
    const digits = talk.phone.slice(1);
    const raw = await call<HistoryResult>(server, "GET", `/api/messages/+${digits}`);
    const encoded = await call<HistoryResult>(server, "GET", `/api/messages/%2B${digits}`);
    expect(raw.status).toBe(200);
    expect(encoded.status).toBe(200);
    expect(raw.body.total).toBe(7);
    expect(raw.body).toEqual(encoded.body);
  });

  test("an unknown but valid phone: 200 with no messages and total 0", async () => {
    const res = await history(server, newPhone());
    expect(res).toMatchObject({ success: true, messages: [], total: 0, limit: 50, offset: 0 });
  });

  for (const [why, path] of [
    ["no plus sign", "14155550123"],
    ["leading 0", "%2B04155550123"],
    ["too short for the US", "%2B1415555012"],
    ["letters", "abc"],
    ["spaces", "%2B1%20415%20555%200123"],
  ] as const) {
    test(`a malformed phone (${why}) is 400 naming phone`, async () => {
      expectBadField(await call(server, "GET", `/api/messages/${path}`), "phone", [server.apiKey]);
    });
  }
});
