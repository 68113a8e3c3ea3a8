import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Storage } from "../../src/db/port";
import { AppError } from "../../src/errors";
import { listHistory, pollInbound, recordInbound, sendMessage, type MessagingDeps } from "../../src/messages/service";
import { isoTime, parseIsoInstant } from "../../src/messages/time";
import type { NetworkDriver } from "../../src/network/driver";
import { createLoopbackNetwork } from "../../src/network/loopback";
import { dialects, manualClock, quietLog, rejectionOf, storages, TEXT_ONLY, oneLine, envLineOf, reader } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

/** Stores `n` inbound messages from `phone` ("in 1", "in 2", …) and returns their records. */
async function receive(storage: Storage, phone: string, n: number, prefix = "in") {
  const records = [];
  for (let i = 0; i < n; i++) records.push((await recordInbound(storage, envLineOf("loopback"), { phone, message: `${prefix} ${i + 1}` })).record);
  return records;
}

// Where a dialect's clock cannot be moved, the tests that move it run on the real clock.
describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  async function setup(start?: number) {
    const clock = manualClock(start);
    const storage = await fresh(dialect.movableClock ? { clock: clock.now } : {});
    const deps: MessagingDeps = { storage, lines: oneLine(createLoopbackNetwork()), log: quietLog };
    return { store: storage.messages, storage, deps, clock };
  }

  describe("sendMessage on the loopback network", () => {
    test("ends delivered, with the stored timestamp", async () => {
      const { storage, store, deps } = await setup();
      const record = await sendMessage(deps, { phone: A, message: "hello" });
      expect(record).toMatchObject({ phone: A, message: "hello", direction: "outbound", status: "delivered" });
      expect(record.error).toBeUndefined();
      const row = await store.get(record.id);
      expect(row?.status).toBe("delivered");
      expect(row?.networkId).toBe(`loopback:${record.id}`);
      expect(record.timestamp).toBe(isoTime(row!.timestamp));
    });

    test("ids are unique and URL-safe", async () => {
      const { deps } = await setup();
      const ids = new Set<string>();
      for (let i = 0; i < 20; i++) ids.add((await sendMessage(deps, { phone: A, message: `m${i}` })).id);
      expect(ids.size).toBe(20);
      for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    });
  });

  describe("sendMessage stores the message before the network sees it", () => {
    test("the network is asked about a message already stored as queued", async () => {
      const { storage, store, deps } = await setup();
      let seen: string | undefined;
      const watching: NetworkDriver = {
        name: "watching",
        capabilities: TEXT_ONLY,
        async send(message) {
          seen = (await store.get(message.id))?.status;
          return { status: "sent", networkId: "w-1" };
        },
      };
      const record = await sendMessage({ ...deps, lines: oneLine(watching) }, { phone: A, message: "hello" });
      expect(seen).toBe("queued");
      expect(record.status).toBe("sent");
      expect((await store.get(record.id))?.networkId).toBe("w-1");
    });
  });

  describe("sendMessage when the network fails", () => {
    const refusing: NetworkDriver = {
      name: "refusing",
      capabilities: TEXT_ONLY,
      async send() {
        throw new Error("carrier refused the number");
      },
    };

    test("throws AppError BAD_GATEWAY", async () => {
      const { deps } = await setup();
      const err = await rejectionOf(sendMessage({ ...deps, lines: oneLine(refusing) }, { phone: A, message: "hello" }));
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("BAD_GATEWAY");
      expect((err as AppError).message).toContain("carrier refused the number");
    });

    test("the message stays in history as failed, with the error text", async () => {
      const { storage, store, deps } = await setup();
      await rejectionOf(sendMessage({ ...deps, lines: oneLine(refusing) }, { phone: A, message: "hello" }));
      const history = await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 });
      expect(history.total).toBe(1);
      expect(history.messages[0]).toMatchObject({
        phone: A,
        message: "hello",
        direction: "outbound",
        status: "failed",
        error: "carrier refused the number",
      });
    });

    test("a thrown non-Error is still recorded as the error text", async () => {
      const { storage, store, deps } = await setup();
      const odd: NetworkDriver = {
        name: "odd",
        capabilities: TEXT_ONLY,
        send: () => Promise.reject("socket closed"),
      };
      const err = await rejectionOf(sendMessage({ ...deps, lines: oneLine(odd) }, { phone: A, message: "hello" }));
      expect((err as AppError).code).toBe("BAD_GATEWAY");
      expect((await listHistory(reader(storage), { phone: A, limit: 1, offset: 0 })).messages[0]).toMatchObject({ status: "failed", error: "socket closed" });
    });
  });

  describe("recordInbound", () => {
    test("stores a received inbound message", async () => {
      const { storage, store } = await setup();
      const { record, duplicate } = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi there" });
      expect(duplicate).toBe(false);
      expect(record).toMatchObject({ phone: A, message: "hi there", direction: "inbound", status: "received" });
      expect((await store.get(record.id))?.body).toBe("hi there");
    });

    test("the same network id twice stores one row and answers the first id, duplicate=true", async () => {
      const { storage, store, clock } = await setup();
      const first = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi", networkId: "net-42" });
      clock.t += 5_000;
      const second = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi", networkId: "net-42" });
      expect(first.duplicate).toBe(false);
      expect(second.duplicate).toBe(true);
      expect(second.record.id).toBe(first.record.id);
      expect(second.record.timestamp).toBe(first.record.timestamp);
      expect((await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).total).toBe(1);
      expect((await pollInbound(reader(storage), { limit: 100 })).count).toBe(1);
    });

    test("different network ids are different messages", async () => {
      const { storage, store } = await setup();
      const one = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi", networkId: "net-1" });
      const two = await recordInbound(storage, envLineOf("loopback"), { phone: A, message: "hi", networkId: "net-2" });
      expect(two.duplicate).toBe(false);
      expect(two.record.id).not.toBe(one.record.id);
      expect((await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).total).toBe(2);
    });
  });

  describe("listHistory: one contact's messages, newest first", () => {
    test("newest first, both directions, only that phone; total counts all", async () => {
      const { storage, store, deps } = await setup();
      const sent = await sendMessage(deps, { phone: A, message: "out 1" });
      await receive(storage, B, 2, "other");
      const [got] = await receive(storage, A, 1);
      const sent2 = await sendMessage(deps, { phone: A, message: "out 2" });
      const page = await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 });
      expect(page.messages.map((m) => m.id)).toEqual([sent2.id, got!.id, sent.id]);
      expect(page.total).toBe(3);
      expect(page.messages.every((m) => m.phone === A)).toBe(true);
    });

    test("timestamps are strictly decreasing down the page", async () => {
      const { storage, store } = await setup(1_000); // frozen clock: ordering must still be by arrival
      await receive(storage, A, 10);
      const stamps = (await listHistory(reader(storage), { phone: A, limit: 50, offset: 0 })).messages.map((m) => parseIsoInstant(m.timestamp)!);
      for (let i = 1; i < stamps.length; i++) expect(stamps[i]!).toBeLessThan(stamps[i - 1]!);
    });

    test("limit and offset select a window; total stays the full count", async () => {
      const { storage, store } = await setup();
      const all = (await receive(storage, A, 7)).reverse(); // newest first
      const page = (limit: number, offset: number) => listHistory(reader(storage), { phone: A, limit, offset });
      expect((await page(3, 0)).messages.map((m) => m.id)).toEqual(all.slice(0, 3).map((m) => m.id));
      expect((await page(3, 3)).messages.map((m) => m.id)).toEqual(all.slice(3, 6).map((m) => m.id));
      expect((await page(3, 6)).messages.map((m) => m.id)).toEqual(all.slice(6).map((m) => m.id));
      expect((await page(3, 7)).messages).toEqual([]);
      expect((await page(3, 100)).messages).toEqual([]);
      for (const offset of [0, 3, 6, 7, 100]) expect((await page(3, offset)).total).toBe(7);
      expect(await page(3, 3)).toMatchObject({ limit: 3, offset: 3 });
    });

    test("a limit above 100 is clamped to 100 and says so", async () => {
      const { storage, store } = await setup();
      await receive(storage, A, 105);
      const page = await listHistory(reader(storage), { phone: A, limit: 500, offset: 0 });
      expect(page.limit).toBe(100);
      expect(page.messages).toHaveLength(100);
      expect(page.total).toBe(105);
    });

    test("an unknown phone has no messages and total 0", async () => {
      const { storage, store } = await setup();
      await receive(storage, A, 2);
      expect(await listHistory(reader(storage), { phone: B, limit: 50, offset: 0 })).toEqual({ success: true, messages: [], total: 0, limit: 50, offset: 0 });
    });
  });

  describe("pollInbound: inbound only, oldest first, since exclusive", () => {
    test("only inbound messages, oldest first", async () => {
      const { storage, store, deps } = await setup();
      const [first] = await receive(storage, A, 1, "a");
      await sendMessage(deps, { phone: A, message: "reply" });
      const [second] = await receive(storage, B, 1, "b");
      await sendMessage(deps, { phone: B, message: "reply" });
      const [third] = await receive(storage, A, 1, "c");
      const poll = await pollInbound(reader(storage), { limit: 100 });
      expect(poll.messages.map((m) => m.id)).toEqual([first!.id, second!.id, third!.id]);
      expect(poll.messages.every((m) => m.direction === "inbound" && m.status === "received")).toBe(true);
      expect(poll.count).toBe(3);
      expect(poll.has_more).toBe(false);
    });

    test("since is exclusive: the message at since is not returned again", async () => {
      const { storage, store } = await setup();
      const msgs = await receive(storage, A, 4);
      const since = parseIsoInstant(msgs[1]!.timestamp)!;
      expect((await pollInbound(reader(storage), { since, limit: 100 })).messages.map((m) => m.id)).toEqual([msgs[2]!.id, msgs[3]!.id]);
      expect((await pollInbound(reader(storage), { since: since - 1, limit: 100 })).messages[0]?.id).toBe(msgs[1]!.id);
      expect((await pollInbound(reader(storage), { since: parseIsoInstant(msgs[3]!.timestamp)!, limit: 100 })).messages).toEqual([]);
    });

    test("without since, from the first inbound message ever stored", async () => {
      const { storage, store } = await setup(0); // the very first timestamp is as early as the store allows
      const msgs = await receive(storage, A, 2);
      expect((await pollInbound(reader(storage), { limit: 100 })).messages.map((m) => m.id)).toEqual(msgs.map((m) => m.id));
    });

    test("the phone filter returns only that phone's inbound messages", async () => {
      const { storage, store } = await setup();
      const fromA = await receive(storage, A, 1, "a1");
      await receive(storage, B, 2, "b");
      fromA.push(...(await receive(storage, A, 1, "a2")));
      const poll = await pollInbound(reader(storage), { phone: A, limit: 100 });
      expect(poll.messages.map((m) => m.id)).toEqual(fromA.map((m) => m.id));
      expect(await pollInbound(reader(storage), { phone: "+61412345678", limit: 100 })).toEqual({ success: true, messages: [], count: 0, has_more: false });
    });

    test("polling consumes nothing: the same poll answers the same messages", async () => {
      const { storage, store } = await setup();
      await receive(storage, A, 3);
      expect(await pollInbound(reader(storage), { limit: 100 })).toEqual(await pollInbound(reader(storage), { limit: 100 }));
    });
  });

  describe("pollInbound: has_more is exact at the boundary", () => {
    test("limit equal to the number remaining: has_more false", async () => {
      const { storage, store } = await setup();
      const msgs = await receive(storage, A, 5);
      const since = parseIsoInstant(msgs[1]!.timestamp)!; // 3 remain
      const poll = await pollInbound(reader(storage), { since, limit: 3 });
      expect(poll.count).toBe(3);
      expect(poll.has_more).toBe(false);
    });

    test("one more remaining than the limit: has_more true", async () => {
      const { storage, store } = await setup();
      const msgs = await receive(storage, A, 5);
      const since = parseIsoInstant(msgs[0]!.timestamp)!; // 4 remain
      const poll = await pollInbound(reader(storage), { since, limit: 3 });
      expect(poll.messages.map((m) => m.id)).toEqual(msgs.slice(1, 4).map((m) => m.id));
      expect(poll.has_more).toBe(true);
    });

    test("with the phone filter, other phones' messages do not count as more", async () => {
      const { storage, store } = await setup();
      await receive(storage, A, 2);
      await receive(storage, B, 3);
      expect((await pollInbound(reader(storage), { phone: A, limit: 2 })).has_more).toBe(false);
      expect((await pollInbound(reader(storage), { phone: B, limit: 2 })).has_more).toBe(true);
    });

    test("outbound messages after the page do not count as more", async () => {
      const { storage, store, deps } = await setup();
      await receive(storage, A, 2);
      await sendMessage(deps, { phone: A, message: "reply" });
      expect((await pollInbound(reader(storage), { limit: 2 })).has_more).toBe(false);
    });

    test("a limit above 100 is clamped to 100", async () => {
      const { storage, store } = await setup();
      await receive(storage, A, 101);
      const poll = await pollInbound(reader(storage), { limit: 1000 });
      expect(poll.count).toBe(100);
      expect(poll.has_more).toBe(true);
    });
  });

  describe("pollInbound: the cursor guarantee", () => {
    test("passing the last timestamp as the next since walks every message exactly once", async () => {
      const { storage, store, deps, clock } = await setup(1_000_000);
      const expected: string[] = [];
      for (let i = 0; i < 23; i++) {
        if (i % 4 === 0) clock.t -= 10; // a clock that jumps back now and then
        if (i % 3 === 0) await sendMessage(deps, { phone: A, message: `out ${i}` });
        expected.push(...(await receive(storage, i % 2 ? A : B, 1, `n${i}`)).map((m) => m.id));
      }
      const seen: string[] = [];
      let since: number | undefined;
      for (let guard = 0; guard < 50; guard++) {
        const poll = await pollInbound(reader(storage), { since, limit: 4 });
        seen.push(...poll.messages.map((m) => m.id));
        if (!poll.has_more) break;
        since = parseIsoInstant(poll.messages.at(-1)!.timestamp)!;
      }
      expect(seen).toEqual(expected);
    });
  });
});
