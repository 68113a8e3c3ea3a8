// Issue 16's storage (src/db/port.ts) on every dialect: the statuses `scheduled` and
// `canceled` in the one status rule, messages stored with their media, replies, scheduled
// messages claimed once and canceled, the listing of what waits, and contact opt-outs
// (beside the message counts the triggers keep).
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { MessageRow, NewMedia, NewMessage, Storage } from "../../src/db/port";
import { openPostgresStorage } from "../../src/db/postgres/storage";
import { openSqliteStorage } from "../../src/db/sqlite/storage";
import { listHistory, pollInbound } from "../../src/messages/service";
import { describePostgres } from "../support/postgres";
import { clockDialects, dialects, inboundRow, outboundRow, rejectionOf, storages, reader } from "./helpers";

// A real database and real timers: bun's 5 s default per test is too short on a busy CI machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";
const HOUR = 3_600_000;

let seq = 0;
const outbound = outboundRow;
const inbound = inboundRow;
/** A scheduled message, due `inMs` from now (negative: due already). */
const scheduled = (inMs: number, extra: Partial<NewMessage> = {}) => outbound({ status: "scheduled", sendAt: Date.now() + inMs, ...extra });
const file = (n: number, type = "image/jpeg"): NewMedia => ({
  id: `med_${String(++seq).padStart(8, "0")}${String(n).padStart(24, "0")}`,
  contentType: type,
  size: 1000 + n,
  storeKey: `2026/11/${seq}-${n}`,
});

/** Drains `claimDueScheduled(limit)` until it returns nothing; the ids it got. */
async function claimAll(storage: Storage, limit: number): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const claimed = await storage.messages.claimDueScheduled(limit);
    if (claimed.length === 0) return ids;
    ids.push(...claimed.map((m) => m.id));
  }
}

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);

  describe("the status rule as each write applies it", () => {
    test("scheduled → queued and scheduled → canceled apply; queued → canceled is refused; canceled is final", async () => {
      const { messages } = await fresh();
      const [a, b, c] = [scheduled(HOUR), scheduled(HOUR), outbound()];
      for (const m of [a, b, c]) await messages.insert(m);
      expect((await messages.get(a.id))?.status).toBe("scheduled");

      // Not sent or failed before it was claimed (queued).
      expect(await messages.setStatus(a.id, "sent")).toBe(false);
      expect(await messages.setStatus(a.id, "failed", { error: "x" })).toBe(false);
      expect(await messages.setStatus(a.id, "queued")).toBe(true);
      expect(await messages.setStatus(a.id, "canceled")).toBe(false);
      expect(await messages.setStatus(a.id, "delivered")).toBe(true);

      expect(await messages.setStatus(b.id, "canceled")).toBe(true);
      for (const to of ["scheduled", "queued", "sent", "delivered", "failed", "canceled"] as const) expect(await messages.setStatus(b.id, to)).toBe(false);
      expect(await messages.get(b.id)).toMatchObject({ status: "canceled", error: null });

      expect(await messages.setStatus(c.id, "canceled")).toBe(false);
      expect(await messages.setStatus(c.id, "scheduled")).toBe(false);
      expect((await messages.get(c.id))?.status).toBe("queued");
    });

    test("scheduled → queued and → canceled write status events (the trigger); storing a scheduled message writes none", async () => {
      const storage = await fresh();
      const [a, b] = [scheduled(-1000), scheduled(HOUR)];
      await storage.messages.insert(a);
      await storage.messages.insert(b);
      expect((await storage.webhooks.events(0, 10)).rows).toEqual([]);
      await storage.messages.claimDueScheduled(10);
      await storage.messages.cancelScheduled(b.id);
      const events = (await storage.webhooks.events(0, 10)).rows;
      expect(events).toMatchObject([
        { type: "message.status_updated", previousStatus: "scheduled", message: { id: a.id, status: "queued", sendAt: a.sendAt } },
        { type: "message.status_updated", previousStatus: "scheduled", message: { id: b.id, status: "canceled", sendAt: b.sendAt } },
      ]);
    });
  });

  describe("messages with media and replies", () => {
    test("a message stores its media in order, with media_count; get, history and poll carry replyTo, sendAt and mediaCount", async () => {
      const { messages } = await fresh();
      const first = (await messages.insert(inbound())).row;
      const files = [file(0, "image/png"), file(1), file(2, "video/mp4")];
      const { row, created } = await messages.insert(outbound({ body: "", replyTo: first.id, media: files }));
      expect(created).toBe(true);
      expect(row).toMatchObject({ replyTo: first.id, sendAt: null, mediaCount: 3 });
      expect(row).not.toHaveProperty("media");
      expect(first).toMatchObject({ replyTo: null, sendAt: null, mediaCount: 0 });
      expect(await messages.get(row.id)).toEqual(row);

      const history = await messages.history(A, 10, 0);
      expect(history.total).toBe(2);
      expect(history.rows.map((r) => [r.id, r.replyTo, r.mediaCount, r.sendAt])).toEqual([
        [row.id, first.id, 3, null],
        [first.id, null, 0, null],
      ]);
      const reply = (await messages.insert(inbound({ replyTo: row.id, media: [file(0)] }))).row;
      expect((await messages.inboundAfter(-1, 10)).rows.map((r) => [r.id, r.replyTo, r.mediaCount])).toEqual([
        [first.id, null, 0],
        [reply.id, row.id, 1],
      ]);

      const media = await messages.mediaOf([first.id, row.id, reply.id, "nothing"]);
      expect([...media.keys()].sort()).toEqual([row.id, reply.id].sort());
      expect(media.get(row.id)).toEqual(
        files.map((f, position) => ({ ...f, messageId: row.id, position, createdAt: expect.any(Number) })),
      );
      const createdAt = media.get(row.id)![0]!.createdAt;
      expect(Math.abs(createdAt - Date.now())).toBeLessThan(60_000);
      expect(await messages.mediaOf([])).toEqual(new Map());
      expect(await messages.media(files[1]!.id)).toEqual({ ...files[1]!, messageId: row.id, position: 1, createdAt });
      expect(await messages.media("med_unknown")).toBeUndefined();
    });

    test("a message whose network id is stored already stores neither it nor its media", async () => {
      const { messages } = await fresh();
      const stored = (await messages.insert(inbound({ networkId: "n-1", media: [file(0)] }))).row;
      const again = await messages.insert(inbound({ networkId: "n-1", media: [file(0), file(1)] }));
      expect(again).toEqual({ row: stored, created: false });
      expect((await messages.mediaOf([stored.id])).get(stored.id)).toHaveLength(1);
    });

    test("a media row that cannot be stored fails its message too (one transaction)", async () => {
      const { messages } = await fresh();
      const taken = file(0);
      await messages.insert(outbound({ media: [taken] }));
      const bad = outbound({ media: [file(1), taken] });
      expect(String(await rejectionOf(messages.insert(bad)))).toMatch(/unique|constraint|duplicate/i);
      expect(await messages.get(bad.id)).toBeUndefined();
      expect(await messages.media(bad.media![0]!.id)).toBeUndefined();
      expect((await messages.history(A, 10, 0)).total).toBe(1);
    });

    test("concurrent inserts with and without media (PostgreSQL: one batch) each keep their own media", async () => {
      const { messages } = await fresh();
      const sent = Array.from({ length: 30 }, (_, i) => outbound({ phone: i % 2 ? A : B, media: Array.from({ length: i % 4 }, (_, n) => file(n)) }));
      const stored = await Promise.all(sent.map((m) => messages.insert(m)));
      expect(stored.map((s) => s.row.mediaCount)).toEqual(sent.map((m) => m.media!.length));
      const media = await messages.mediaOf(sent.map((m) => m.id));
      for (const m of sent) {
        expect((media.get(m.id) ?? []).map((f) => [f.id, f.position])).toEqual(m.media!.map((f, position) => [f.id, position]));
      }
      expect((await messages.history(A, 100, 0)).total + (await messages.history(B, 100, 0)).total).toBe(30);
    });

    test("history and poll records carry reply_to and media (url /api/media/<id>), [] and null when none", async () => {
      const storage = await fresh();
      const { messages } = storage;
      const plain = (await messages.insert(inbound())).row;
      const f = file(0, "image/gif");
      const rich = (await messages.insert(inbound({ replyTo: plain.id, media: [f] }))).row;
      const page = await listHistory(reader(storage), { phone: A, limit: 10, offset: 0 });
      expect(page.messages.map((m) => [m.id, m.reply_to, m.media])).toEqual([
        [rich.id, plain.id, [{ id: f.id, content_type: "image/gif", size: f.size, url: `/api/media/${f.id}` }]],
        [plain.id, null, []],
      ]);
      const polled = await pollInbound(reader(storage), { limit: 10 });
      expect(polled.messages.map((m) => m.media.length)).toEqual([0, 1]);
      expect((await pollInbound(reader(storage), { limit: 1 })).messages).toEqual([
        { id: plain.id, phone: A, message: "hi", direction: "inbound", timestamp: expect.any(String), status: "received", reply_to: null, media: [],
          reactions: [], read_at: null, edited_at: null, unsent_at: null, chat_id: `dm_${A.slice(1)}`, line_id: "ln_default" },
      ]);
    });
  });

  describe("scheduled messages", () => {
    test("claimDueScheduled moves only due scheduled messages to queued, soonest first, at most limit, each once", async () => {
      const { messages } = await fresh();
      const late = scheduled(-1_000);
      const soon = scheduled(-3_000);
      const mid = scheduled(-2_000);
      const future = scheduled(HOUR);
      const canceled = scheduled(-5_000);
      const queued = outbound();
      for (const m of [late, soon, mid, future, canceled, queued]) await messages.insert(m);
      await messages.cancelScheduled(canceled.id);

      const before = await messages.get(soon.id);
      // The claim stamps its own time; the inserts' message clock may have run a little ahead of it.
      const claimedFromUs = Date.now() * 1000;
      const first = await messages.claimDueScheduled(2);
      expect(first.map((m) => m.id)).toEqual([soon.id, mid.id]);
      expect(first[0]).toEqual({ ...before!, status: "queued", updatedAt: expect.any(Number) } as MessageRow);
      expect(first[0]!.updatedAt).toBeGreaterThanOrEqual(claimedFromUs);
      expect((await messages.claimDueScheduled(10)).map((m) => m.id)).toEqual([late.id]);
      expect(await messages.claimDueScheduled(10)).toEqual([]);

      expect((await messages.get(future.id))?.status).toBe("scheduled");
      expect((await messages.get(canceled.id))?.status).toBe("canceled");
      expect((await messages.get(queued.id))?.status).toBe("queued");
      for (const m of [late, soon, mid]) expect((await messages.get(m.id))?.status).toBe("queued");
    });

    test("concurrent claimers on one storage take each due message once", async () => {
      const storage = await fresh();
      const due = Array.from({ length: 40 }, (_, i) => scheduled(-1_000 - i));
      for (const m of due) await storage.messages.insert(m);
      const ids = (await Promise.all([claimAll(storage, 3), claimAll(storage, 5), claimAll(storage, 7)])).flat();
      expect(ids.sort()).toEqual(due.map((m) => m.id).sort());
    });

    test("cancelScheduled cancels a scheduled message once; not a queued, claimed or unknown one", async () => {
      const { messages } = await fresh();
      const a = scheduled(HOUR);
      const b = scheduled(-1_000);
      const q = outbound();
      for (const m of [a, b, q]) await messages.insert(m);
      const canceled = await messages.cancelScheduled(a.id);
      expect(canceled).toMatchObject({ id: a.id, status: "canceled", sendAt: a.sendAt, body: "hello" });
      expect(await messages.get(a.id)).toEqual(canceled);
      expect(await messages.cancelScheduled(a.id)).toBeUndefined();
      expect(await messages.cancelScheduled(q.id)).toBeUndefined();
      expect(await messages.cancelScheduled("nothing")).toBeUndefined();
      await messages.claimDueScheduled(10);
      expect(await messages.cancelScheduled(b.id)).toBeUndefined();
      expect((await messages.get(b.id))?.status).toBe("queued");
      expect((await messages.get(q.id))?.status).toBe("queued");
    });

    test("scheduled lists waiting messages soonest first, with the total, by page", async () => {
      const { messages } = await fresh();
      expect(await messages.scheduled(10, 0)).toEqual({ rows: [], total: 0 });
      const later = scheduled(3 * HOUR, { phone: B });
      const sooner = scheduled(HOUR, { replyTo: "m-0", media: [file(0)] });
      const middle = scheduled(2 * HOUR);
      const gone = scheduled(30 * HOUR);
      for (const m of [later, sooner, middle, gone, outbound()]) await messages.insert(m);
      await messages.cancelScheduled(gone.id);

      const first = await messages.scheduled(2, 0);
      expect(first.total).toBe(3);
      expect(first.rows).toEqual([
        {
          id: sooner.id,
          phone: A,
          body: "hello",
          direction: "outbound",
          status: "scheduled",
          timestamp: expect.any(Number),
          error: null,
          replyTo: "m-0",
          sendAt: sooner.sendAt!,
          mediaCount: 1,
          reactionCount: 0,
          readAt: null,
          editedAt: null,
          unsentAt: null,
          chatId: null,
          lineId: "ln_default",
        },
        expect.objectContaining({ id: middle.id, sendAt: middle.sendAt }),
      ]);
      expect(await messages.scheduled(2, 2)).toEqual({ rows: [expect.objectContaining({ id: later.id, phone: B })], total: 3 });
      expect(await messages.scheduled(2, 5)).toEqual({ rows: [], total: 3 });
    });
  });

  describe("contacts", () => {
    test("an opt-out before any message makes a row; messages still count; opting back in clears the time", async () => {
      const storage = await fresh();
      expect(await storage.contacts.get(A)).toBeUndefined();
      const out = await storage.contacts.setOptedOut(A, true);
      expect(out).toEqual({ phone: A, optedOut: true, optedOutAt: expect.any(Number) });
      expect(Math.abs(out.optedOutAt! - Date.now())).toBeLessThan(60_000);
      expect(await storage.contacts.get(A)).toEqual(out);
      expect(await storage.messages.history(A, 10, 0)).toEqual({ rows: [], total: 0 });

      await storage.messages.insert(inbound());
      await storage.messages.insert(outbound());
      expect((await storage.messages.history(A, 10, 0)).total).toBe(2);
      // Still out, since the first opt-out: a second one keeps its time.
      expect(await storage.contacts.get(A)).toEqual(out);
      expect(await storage.contacts.setOptedOut(A, true)).toEqual(out);

      expect(await storage.contacts.setOptedOut(A, false)).toEqual({ phone: A, optedOut: false, optedOutAt: null });
      expect(await storage.contacts.get(A)).toEqual({ phone: A, optedOut: false, optedOutAt: null });
      await storage.messages.insert(inbound());
      expect((await storage.messages.history(A, 10, 0)).total).toBe(3);
    });

    test("a contact made by its messages is not opted out; opting out keeps its count; others are untouched", async () => {
      const storage = await fresh();
      await storage.messages.insert(inbound({ phone: B }));
      expect(await storage.contacts.get(B)).toEqual({ phone: B, optedOut: false, optedOutAt: null });
      await storage.contacts.setOptedOut(B, true);
      expect((await storage.messages.history(B, 10, 0)).total).toBe(1);
      expect(await storage.contacts.get(A)).toBeUndefined();
    });

    test("inside a transaction: an opt-out rolls back with the message stored beside it", async () => {
      const storage = await fresh();
      await rejectionOf(
        storage.transaction(async (tx) => {
          await tx.messages.insert(inbound({ body: "STOP" }));
          await tx.contacts.setOptedOut(A, true);
          expect((await tx.contacts.get(A))?.optedOut).toBe(true);
          throw new Error("rolled back");
        }),
      );
      expect(await storage.contacts.get(A)).toBeUndefined();
      expect((await storage.messages.history(A, 10, 0)).total).toBe(0);
    });
  });
});

describe.each(clockDialects)("contacts on $name, on a clock the test moves", (dialect) => {
  const fresh = storages(dialect);

  test("the opt-out time is the clock's, kept by a later opt-out, new after opting back in", async () => {
    let us = Date.UTC(2026, 10, 21, 9, 30) * 1000;
    const storage = await fresh({ clock: () => us });
    expect((await storage.contacts.setOptedOut(A, true)).optedOutAt).toBe(us / 1000);
    us += HOUR * 1000;
    expect((await storage.contacts.setOptedOut(A, true)).optedOutAt).toBe(us / 1000 - HOUR);
    await storage.contacts.setOptedOut(A, false);
    expect((await storage.contacts.setOptedOut(A, true)).optedOutAt).toBe(us / 1000);
  });

  test("a scheduled message becomes due when the clock reaches its send time", async () => {
    let us = Date.UTC(2026, 10, 21, 9, 30) * 1000;
    const storage = await fresh({ clock: () => us });
    const m = outbound({ status: "scheduled", sendAt: us / 1000 + HOUR });
    await storage.messages.insert(m);
    expect(await storage.messages.claimDueScheduled(10)).toEqual([]);
    us += (HOUR - 1) * 1000;
    expect(await storage.messages.claimDueScheduled(10)).toEqual([]);
    us += 1000;
    expect((await storage.messages.claimDueScheduled(10)).map((r) => [r.id, r.status, r.updatedAt])).toEqual([[m.id, "queued", us]]);
  });
});

describe("scheduled messages claimed from two SQLite processes (two connections to one file)", () => {
  test("each due message is claimed by exactly one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-scheduled-"));
    const a = openSqliteStorage(join(dir, "textwire.db"));
    const b = openSqliteStorage(join(dir, "textwire.db"));
    try {
      const due = Array.from({ length: 60 }, (_, i) => scheduled(-1_000 - i));
      for (const m of due) await a.messages.insert(m);
      await a.messages.insert(scheduled(HOUR));
      const ids = (await Promise.all([claimAll(a, 4), claimAll(b, 4), claimAll(a, 9), claimAll(b, 9)])).flat();
      expect(ids.sort()).toEqual(due.map((m) => m.id).sort());
      expect((await b.messages.scheduled(10, 0)).total).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describePostgres("scheduled messages claimed from two PostgreSQL processes (two pools)", (db) => {
  test("each due message is claimed by exactly one (FOR UPDATE SKIP LOCKED)", async () => {
    const a = await openPostgresStorage(db().url, 10);
    const b = await openPostgresStorage(db().url, 10);
    try {
      const due = Array.from({ length: 200 }, (_, i) => scheduled(-1_000 - i));
      await Promise.all(due.map((m) => a.messages.insert(m)));
      await a.messages.insert(scheduled(HOUR));
      const ids = (await Promise.all([claimAll(a, 5), claimAll(a, 7), claimAll(b, 5), claimAll(b, 7)])).flat();
      expect(ids.length).toBe(due.length);
      expect(ids.sort()).toEqual(due.map((m) => m.id).sort());
      expect((await b.messages.scheduled(10, 0)).total).toBe(1);
      // Each claim wrote one status event.
      const { rows } = await a.pool.query(`SELECT count(*)::int AS n FROM events WHERE type = 'message.status_updated' AND previous_status = 'scheduled'`);
      expect(rows).toEqual([{ n: 200 }]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  test("opt-outs and message counts from two pools at once stay consistent", async () => {
    const a = await openPostgresStorage(db().url, 10);
    const b = await openPostgresStorage(db().url, 10);
    try {
      const phone = "+14155550199";
      await Promise.all([
        ...Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).messages.insert(inbound({ phone }))),
        ...Array.from({ length: 10 }, (_, i) => (i % 2 ? b : a).contacts.setOptedOut(phone, true)),
      ]);
      expect((await a.messages.history(phone, 1, 0)).total).toBe(40);
      expect(await b.contacts.get(phone)).toMatchObject({ optedOut: true });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);
});
