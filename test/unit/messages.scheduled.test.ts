// Scheduled sends against real storage on each dialect: sendMessage with send_at, the
// scheduled sender loop (src/messages/scheduled.ts), cancel and the waiting list. Two
// loops on one database (two storages on PostgreSQL, two connections to one SQLite file)
// never send one message twice.
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Storage } from "../../src/db/port";
import { openPostgresStorage } from "../../src/db/postgres/storage";
import { openSqliteStorage } from "../../src/db/sqlite/storage";
import { AppError } from "../../src/errors";
import { cancelScheduled, listScheduled, OPTED_OUT_AT_SEND_TIME, startScheduledSender, type ScheduledSender } from "../../src/messages/scheduled";
import { sendAtProblem, sendMessage, type MessagingDeps } from "../../src/messages/service";
import type { NetworkDriver } from "../../src/network/driver";
import { createTestDatabase } from "../support/postgres";
import { dialects, quietLog, rejectionOf, storages, TEXT_ONLY, type TestDialect, oneLine } from "./helpers";

// A real database and real timers: bun's 5 s default per test is too short on a busy CI machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

/** A loopback-like network that remembers every message id it was asked to send. */
function countingNetwork(fail?: (text: string) => boolean) {
  const sent: string[] = [];
  const driver: NetworkDriver = {
    name: "loopback",
    capabilities: TEXT_ONLY,
    async send(message) {
      sent.push(message.id);
      await Bun.sleep(1);
      if (fail?.(message.text)) throw new AppError("BAD_GATEWAY", "the network is down");
      return { networkId: `loopback:${message.id}`, status: "delivered" };
    },
  };
  return { sent, driver };
}

/** Stores a scheduled message directly, due `inMs` from now (negative: overdue). */
async function schedule(storage: Storage, phone: string, text: string, inMs: number) {
  const { row } = await storage.messages.insert({
    id: Bun.randomUUIDv7(),
    phone,
    body: text,
    direction: "outbound",
    status: "scheduled",
    network: "loopback",
    networkId: null,
    sendAt: Date.now() + inMs,
  });
  return row;
}

/** Polls (bounded, 10 s) until `check` holds. */
async function eventually(what: string, check: () => Promise<boolean> | boolean) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

const statusOf = async (storage: Storage, id: string) => (await storage.messages.get(id))?.status;

test("sendAtProblem: after now, at most one calendar year ahead", () => {
  const now = Date.UTC(2026, 10, 21, 9, 30);
  expect(sendAtProblem(now, now)).toBe("must be in the future");
  expect(sendAtProblem(now - 1, now)).toBe("must be in the future");
  expect(sendAtProblem(now + 1, now)).toBeUndefined();
  expect(sendAtProblem(Date.UTC(2027, 10, 21, 9, 30), now)).toBeUndefined();
  expect(sendAtProblem(Date.UTC(2027, 10, 21, 9, 30) + 1, now)).toBe("must be at most 1 year ahead");
});

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);
  const senders: ScheduledSender[] = [];
  afterEach(async () => {
    await Promise.all(senders.splice(0).map((s) => s.stop(5_000)));
  });
  const run = (deps: MessagingDeps) => {
    const sender = startScheduledSender(deps);
    senders.push(sender);
    return sender;
  };

  describe("sendMessage with send_at", () => {
    test("stores the message scheduled, with its send_at, and asks the network nothing", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      const at = Date.now() + 60_000;
      const record = await sendMessage({ storage, lines: oneLine(net.driver), log: quietLog }, { phone: A, message: "later", send_at: at * 1000 + 500 });
      expect(record.status).toBe("scheduled");
      // Rounded up to the millisecond: never sent before the time asked.
      expect(record.send_at).toBe(new Date(at + 1).toISOString().replace("Z", "000Z"));
      expect(net.sent).toEqual([]);
      const row = await storage.messages.get(record.id);
      expect([row?.status, row?.sendAt]).toEqual(["scheduled", at + 1]);
    });

    test("a time not in the future, or more than a year ahead, is 400 naming send_at, and stores nothing", async () => {
      const storage = await fresh();
      const deps = { storage, lines: oneLine(countingNetwork().driver), log: quietLog };
      for (const [at, problem] of [
        [Date.now() - 1, "send_at: must be in the future"],
        [Date.now() + 367 * 24 * 3600_000, "send_at: must be at most 1 year ahead"],
      ] as const) {
        const err = await rejectionOf(sendMessage(deps, { phone: A, message: "x", send_at: at * 1000 }));
        expect(err).toBeInstanceOf(AppError);
        expect([(err as AppError).code, (err as AppError).message]).toEqual(["BAD_REQUEST", problem]);
      }
      expect((await storage.messages.history(A, 10, 0)).total).toBe(0);
    });
  });

  describe("the scheduled sender", () => {
    test("sends due messages once, overdue ones at once, and leaves future ones scheduled", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      const overdue = await schedule(storage, A, "overdue", -3_600_000);
      const due = await schedule(storage, B, "due", -1);
      const future = await schedule(storage, A, "future", 3_600_000);
      run({ storage, lines: oneLine(net.driver), log: quietLog });
      await eventually("both due messages delivered", async () => (await statusOf(storage, overdue.id)) === "delivered" && (await statusOf(storage, due.id)) === "delivered");
      // A few more rounds: nothing is sent again, the future one waits.
      await Bun.sleep(1_200);
      expect(net.sent.toSorted()).toEqual([overdue.id, due.id].toSorted());
      expect(await statusOf(storage, future.id)).toBe("scheduled");
      const row = await storage.messages.get(due.id);
      expect(row?.networkId).toBe(`loopback:${due.id}`);
    });

    test("sends a message when its time comes, not before", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      run({ storage, lines: oneLine(net.driver), log: quietLog });
      const soon = await schedule(storage, A, "soon", 1_000);
      await eventually("the message at the network", () => net.sent.includes(soon.id));
      // The database decides when it is due: it was claimed no earlier than its time.
      expect(Date.now()).toBeGreaterThanOrEqual(soon.sendAt!);
      await eventually("the message delivered", async () => (await statusOf(storage, soon.id)) === "delivered");
      expect(net.sent).toEqual([soon.id]);
    });

    test("a network failure fails that message with its error and the loop goes on", async () => {
      const storage = await fresh();
      const net = countingNetwork((text) => text === "doomed");
      const doomed = await schedule(storage, A, "doomed", -1);
      const fine = await schedule(storage, B, "fine", -1);
      run({ storage, lines: oneLine(net.driver), log: quietLog });
      await eventually("both settled", async () => (await statusOf(storage, doomed.id)) === "failed" && (await statusOf(storage, fine.id)) === "delivered");
      expect((await storage.messages.get(doomed.id))?.error).toBe("line default: the network is down");
      const later = await schedule(storage, A, "later", -1);
      await eventually("a later one sent too", async () => (await statusOf(storage, later.id)) === "delivered");
    });

    test("a contact that opted out before the time: the message fails and the network never sees it", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      const held = await schedule(storage, A, "held", -1);
      await storage.contacts.setOptedOut(A, true);
      const other = await schedule(storage, B, "other", -1);
      run({ storage, lines: oneLine(net.driver), log: quietLog });
      await eventually("both settled", async () => (await statusOf(storage, held.id)) === "failed" && (await statusOf(storage, other.id)) === "delivered");
      expect((await storage.messages.get(held.id))?.error).toBe(OPTED_OUT_AT_SEND_TIME);
      expect(net.sent).toEqual([other.id]);
    });

    test("stop() ends the loop: a message due after it is not sent", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      const sender = run({ storage, lines: oneLine(net.driver), log: quietLog });
      await sender.stop(5_000);
      const due = await schedule(storage, A, "after stop", -1);
      await Bun.sleep(1_200);
      expect([net.sent, await statusOf(storage, due.id)]).toEqual([[], "scheduled"]);
    });
  });

  describe("cancel and the waiting list", () => {
    test("cancel: scheduled → canceled; again 409 naming its status; an unknown id 404; never sent", async () => {
      const storage = await fresh();
      const net = countingNetwork();
      const row = await schedule(storage, A, "cancel me", 1_000);
      const { message } = await cancelScheduled({ storage }, row.id);
      expect(message).toMatchObject({ id: row.id, status: "canceled" });
      const again = (await rejectionOf(cancelScheduled({ storage }, row.id))) as AppError;
      expect([again.code, again.message]).toEqual(["CONFLICT", `message ${row.id} is canceled; only a scheduled message can be canceled`]);
      const unknown = (await rejectionOf(cancelScheduled({ storage }, "nope"))) as AppError;
      expect(unknown.code).toBe("NOT_FOUND");
      run({ storage, lines: oneLine(net.driver), log: quietLog });
      await Bun.sleep(2_000);
      expect([net.sent, await statusOf(storage, row.id)]).toEqual([[], "canceled"]);
    });

    test("a message already sent cannot be canceled (409 says it was delivered)", async () => {
      const storage = await fresh();
      const sent = await sendMessage({ storage, lines: oneLine(countingNetwork().driver), log: quietLog }, { phone: A, message: "now" });
      const err = (await rejectionOf(cancelScheduled({ storage }, sent.id))) as AppError;
      expect([err.code, err.message]).toEqual(["CONFLICT", `message ${sent.id} is delivered; only a scheduled message can be canceled`]);
    });

    test("lists waiting messages soonest first, a page at a time, with the total", async () => {
      const storage = await fresh();
      const third = await schedule(storage, A, "third", 30_000);
      const first = await schedule(storage, B, "first", 10_000);
      const second = await schedule(storage, A, "second", 20_000);
      const gone = await schedule(storage, A, "canceled", 15_000);
      await cancelScheduled({ storage }, gone.id);
      const all = await listScheduled(storage.messages, { limit: 50, offset: 0 });
      expect([all.messages.map((m) => m.id), all.total]).toEqual([[first.id, second.id, third.id], 3]);
      expect(all.messages.every((m) => m.status === "scheduled" && typeof m.send_at === "string")).toBe(true);
      const page = await listScheduled(storage.messages, { limit: 1, offset: 1 });
      expect([page.messages.map((m) => m.id), page.total, page.limit, page.offset]).toEqual([[second.id], 3, 1, 1]);
      expect((await listScheduled(storage.messages, { limit: 500, offset: 0 })).limit).toBe(100);
    });
  });

  test("two loops on one database send each due message exactly once", async () => {
    const [one, two, close] = await twoStorages(dialect);
    try {
      const net = countingNetwork();
      const ids: string[] = [];
      for (let i = 0; i < 120; i++) ids.push((await schedule(one, i % 2 ? A : B, `m${i}`, i % 3 === 0 ? -1 : 300)).id);
      run({ storage: one, lines: oneLine(net.driver), log: quietLog });
      run({ storage: two, lines: oneLine(net.driver), log: quietLog });
      await eventually("every message delivered", async () => {
        for (const id of ids) if ((await statusOf(one, id)) !== "delivered") return false;
        return true;
      });
      expect(net.sent.length).toBe(ids.length);
      expect(new Set(net.sent).size).toBe(ids.length);
    } finally {
      await Promise.all(senders.splice(0).map((s) => s.stop(5_000)));
      await close();
    }
  });
});

/** Two storages on one new database of the dialect: two pools on PostgreSQL, two connections to one SQLite file. */
async function twoStorages(dialect: TestDialect): Promise<[Storage, Storage, () => Promise<void>]> {
  if (dialect.name === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "textwire-scheduled-"));
    const file = join(dir, "textwire.db");
    const one = openSqliteStorage(file);
    const two = openSqliteStorage(file);
    return [one, two, async () => {
      await one.close();
      await two.close();
      rmSync(dir, { recursive: true, force: true });
    }];
  }
  const database = await createTestDatabase();
  const one = await openPostgresStorage(database.url, 5);
  const two = await openPostgresStorage(database.url, 5);
  return [one, two, async () => {
    await one.close();
    await two.close();
    await database.drop();
  }];
}
