// GET /api/messages/poll: only inbound messages, oldest first, after an exclusive
// `since`, optionally for one phone, with limit and has_more (docs/api.md).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { call, expectBadField, expectRecord, inbound, micros, newPhone, poll, send, type PollResult, type SendResult } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

/** The same instant written with a UTC offset of `minutes`, e.g. +05:45. */
function withOffset(iso: string, minutes: number): string {
  // The microsecond digits are kept: an exclusive since must name the exact instant.
  const local = new Date(Date.parse(iso) + minutes * 60_000).toISOString().slice(0, -1) + iso.slice(23, 26);
  const abs = Math.abs(minutes);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${local}${minutes < 0 ? "-" : "+"}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

describe("a seeded mix of inbound and outbound messages", () => {
  let server: Server;
  const p1 = newPhone();
  const p2 = newPhone();
  // Inbound messages in the order they were stored, with their text and phone.
  const ins: (SendResult & { phone: string; message: string })[] = [];
  const outs: SendResult[] = [];

  beforeAll(async () => {
    // A zone far from UTC, so "a since without a zone is UTC" cannot pass by accident.
    server = await startServer({ env: { TZ: "Asia/Kathmandu" } });
    const note = async (phone: string, message: string) => ins.push({ ...(await inbound(server, phone, message)), phone, message });
    await note(p1, "in 1");
    outs.push(await send(server, p1, "out 1"));
    await note(p1, "in 2");
    await note(p2, "in 3");
    outs.push(await send(server, p2, "out 2"));
    await note(p1, "in 4");
    await note(p2, "in 5");
  }, 60_000);
  afterAll(() => server?.kill());

  const ids = (res: PollResult) => res.messages.map((m) => m.id);
  const idsOf = (list: { message_id: string }[]) => list.map((s) => s.message_id);

  test("without since: every inbound message ever stored, oldest first, and no outbound one", async () => {
    const res = await poll(server);
    expect(res).toMatchObject({ success: true, count: 5, has_more: false });
    expect(ids(res)).toEqual(idsOf(ins));
    res.messages.forEach((m, i) => {
      const s = ins[i]!;
      expectRecord(m, { id: s.message_id, phone: s.phone, message: s.message, direction: "inbound", status: "received", timestamp: s.timestamp });
    });
    for (const o of outs) expect(ids(res)).not.toContain(o.message_id);
  });

  test("count equals the number of messages returned", async () => {
    const res = await poll(server, { since: ins[0]!.timestamp });
    expect(res.count).toBe(res.messages.length);
    expect(res.count).toBe(4);
  });

  test("since is exclusive: since = the second message's timestamp starts at the third", async () => {
    expect(ids(await poll(server, { since: ins[1]!.timestamp }))).toEqual(idsOf(ins.slice(2)));
  });

  test("since = the newest inbound timestamp gives nothing, has_more false", async () => {
    const res = await poll(server, { since: ins[4]!.timestamp });
    expect(res).toMatchObject({ success: true, messages: [], count: 0, has_more: false });
  });

  test("since before everything gives everything; since in the future gives nothing", async () => {
    expect(ids(await poll(server, { since: "2000-01-01T00:00:00.000Z" }))).toEqual(idsOf(ins));
    expect((await poll(server, { since: "2999-01-01T00:00:00.000Z" })).count).toBe(0);
  });

  test("since without a zone means UTC (the server runs in Asia/Kathmandu)", async () => {
    const since = ins[1]!.timestamp.replace(/Z$/, "");
    expect(ids(await poll(server, { since }))).toEqual(idsOf(ins.slice(2)));
  });

  test("since with a UTC offset names the same instant (+05:45 and -08:00)", async () => {
    for (const minutes of [345, -480]) {
      const since = withOffset(ins[1]!.timestamp, minutes);
      expect(ids(await poll(server, { since }))).toEqual(idsOf(ins.slice(2)));
    }
  });

  test("a millisecond since from an older client is read as that instant", async () => {
    const since = ins[2]!.timestamp.slice(0, 23) + "Z";
    const expected = ins.filter((s) => micros(s.timestamp) > micros(since));
    expect(expected.length).toBeGreaterThanOrEqual(ins.length - 3);
    expect(ids(await poll(server, { since }))).toEqual(idsOf(expected));
  });

  test("since with whole seconds only is accepted", async () => {
    const since = ins[2]!.timestamp.replace(/\.\d{6}Z$/, "Z");
    const expected = ins.filter((s) => micros(s.timestamp) > micros(since));
    expect(ids(await poll(server, { since }))).toEqual(idsOf(expected));
  });

  for (const since of ["yesterday", "banana", "2026-13-01T00:00:00Z", "2026-11-21T25:61:00Z"]) {
    test(`unparseable since ${JSON.stringify(since)} is 400 naming since`, async () => {
      const reply = await call(server, "GET", `/api/messages/poll?since=${encodeURIComponent(since)}`);
      expectBadField(reply, "since", [server.apiKey]);
    });
  }

  test("phone filter, percent-encoded: only that phone's inbound messages", async () => {
    const reply = await call<PollResult>(server, "GET", `/api/messages/poll?phone=%2B${p1.slice(1)}`);
    expect(reply.status).toBe(200);
    expect(ids(reply.body)).toEqual(idsOf(ins.filter((s) => s.phone === p1)));
  });

  test("phone filter with a raw '+' (which arrives as a space) works the same", async () => {
    const raw = await call<PollResult>(server, "GET", `/api/messages/poll?phone=+${p1.slice(1)}`);
    expect(raw.status).toBe(200);
    expect(ids(raw.body)).toEqual(idsOf(ins.filter((s) => s.phone === p1)));
    const space = await call<PollResult>(server, "GET", `/api/messages/poll?phone=%20${p2.slice(1)}`);
    expect(space.status).toBe(200);
    expect(ids(space.body)).toEqual(idsOf(ins.filter((s) => s.phone === p2)));
  });

  test("phone filter combined with since", async () => {
    const res = await poll(server, { phone: p1, since: ins[0]!.timestamp });
    expect(ids(res)).toEqual(idsOf(ins.filter((s) => s.phone === p1).slice(1)));
  });

  test("phone filter for a phone with no inbound messages gives nothing", async () => {
    expect(await poll(server, { phone: newPhone() })).toMatchObject({ success: true, messages: [], count: 0, has_more: false });
  });

  for (const phone of ["14155550123", "+1415555012", "+1 415 555 0123", "abc"]) {
    test(`a malformed phone filter ${JSON.stringify(phone)} is 400 naming phone`, async () => {
      const reply = await call(server, "GET", `/api/messages/poll?phone=${encodeURIComponent(phone)}`);
      expectBadField(reply, "phone");
    });
  }

  test("polling is stateless: the same poll twice gives the same messages", async () => {
    const first = await poll(server, { since: ins[0]!.timestamp });
    const second = await poll(server, { since: ins[0]!.timestamp });
    expect(second).toEqual(first);
    expect(first.count).toBe(4);
  });

  test("/api/messages/poll is never taken for a phone number", async () => {
    const reply = await call<Record<string, unknown>>(server, "GET", "/api/messages/poll");
    expect(reply.status).toBe(200);
    expect(reply.body).toHaveProperty("count");
    expect(reply.body).toHaveProperty("has_more");
    expect(reply.body).not.toHaveProperty("total");
  });
});

describe("limit and has_more", () => {
  let server: Server;
  const crowd = newPhone(); // 105 inbound, stored first
  const few = newPhone(); // then 5 inbound, then an outbound one
  const crowdIds: string[] = [];
  const fewIns: SendResult[] = [];

  beforeAll(async () => {
    server = await startServer();
    for (let i = 0; i < 105; i++) crowdIds.push((await inbound(server, crowd, `crowd ${i}`)).message_id);
    for (let i = 0; i < 5; i++) fewIns.push(await inbound(server, few, `few ${i}`));
    await send(server, few, "an outbound reply, never polled");
  }, 60_000);
  afterAll(() => server?.kill());

  test("limit=2 pages through 5 messages: 2 + has_more, 2 + has_more, 1 and no more", async () => {
    const pages: [number, boolean][] = [];
    const seen: string[] = [];
    let since: string | undefined;
    for (let i = 0; i < 3; i++) {
      const res = await poll(server, { phone: few, limit: 2, ...(since ? { since } : {}) });
      pages.push([res.count, res.has_more]);
      seen.push(...res.messages.map((m) => m.id));
      since = res.messages.at(-1)?.timestamp;
    }
    expect(pages).toEqual([
      [2, true],
      [2, true],
      [1, false],
    ]);
    expect(seen).toEqual(fewIns.map((s) => s.message_id));
  });

  test("has_more is false when exactly limit messages remain, and an outbound message does not count", async () => {
    const res = await poll(server, { phone: few, limit: 5 });
    expect(res.count).toBe(5);
    expect(res.has_more).toBe(false);
  });

  test("has_more is true when limit is one short", async () => {
    expect(await poll(server, { phone: few, limit: 4 })).toMatchObject({ count: 4, has_more: true });
  });

  test("without a limit at most 100 come back, has_more true, and the rest follow", async () => {
    const first = await poll(server, { phone: crowd });
    expect(first.count).toBe(100);
    expect(first.has_more).toBe(true);
    expect(first.messages.map((m) => m.id)).toEqual(crowdIds.slice(0, 100));
    const rest = await poll(server, { phone: crowd, since: first.messages.at(-1)!.timestamp });
    expect(rest.messages.map((m) => m.id)).toEqual(crowdIds.slice(100));
    expect(rest.has_more).toBe(false);
  });

  test("unfiltered, the default limit is also 100 and has_more is true", async () => {
    const res = await poll(server);
    expect(res.count).toBe(100);
    expect(res.has_more).toBe(true);
  });

  test("limit=100 is accepted", async () => {
    expect((await poll(server, { limit: 100 })).count).toBe(100);
  });

  for (const limit of ["0", "-1", "abc", "1.5"]) {
    test(`limit=${JSON.stringify(limit)} is 400 naming limit`, async () => {
      expectBadField(await call(server, "GET", `/api/messages/poll?limit=${limit}`), "limit");
    });
  }
});
