// The storage port's own promises (src/db/port.ts), on every dialect: the unit of work,
// conditional statements that one racer wins, and named leases.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NewMessage } from "../../src/db/port";
import { finishRun, ensureWorkflow } from "../../src/workflows/store";
import { dialects, rejectionOf, storages } from "./helpers";

// A real database and real timers: bun's 5 s default per test is too short on a busy CI machine.
setDefaultTimeout(30_000);

const message = (id: string): NewMessage => ({ id, phone: "+14155550123", body: "hi", direction: "outbound", status: "queued", network: "loopback", networkId: null });

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);

  describe("transaction", () => {
    test("commits every write together", async () => {
      const storage = await fresh();
      const claim = { scope: "s", key: "k" };
      await storage.transaction(async (tx) => {
        await tx.idempotency.tryInsertPending(claim, "p", 60_000);
        await tx.messages.insert(message("m1"));
        await tx.idempotency.attach(claim, "m1", "{}");
      });
      expect((await storage.messages.get("m1"))?.id).toBe("m1");
      expect(await storage.transaction((tx) => tx.idempotency.lockForDecision(claim, 60_000))).toMatchObject({ messageId: "m1", messageStatus: "queued" });
    });

    test("a throw rolls every write back and is rethrown", async () => {
      const storage = await fresh();
      const err = await rejectionOf(
        storage.transaction(async (tx) => {
          await tx.messages.insert(message("m1"));
          await tx.networkState.set("n", "k", "v");
          throw new Error("changed my mind");
        }),
      );
      expect(String(err)).toContain("changed my mind");
      expect(await storage.messages.get("m1")).toBeUndefined();
      expect(await storage.networkState.get("n", "k")).toBeUndefined();
      // The storage is usable afterwards.
      expect((await storage.messages.insert(message("m2"))).created).toBe(true);
    });

    test("a read outside a transaction never sees its writes before the commit", async () => {
      const storage = await fresh();
      let inserted!: () => void;
      const written = new Promise<void>((resolve) => (inserted = resolve));
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      // The transaction stays open until the test releases it, so `open` is true only while it certainly is.
      let open = true;
      const tx = storage.transaction(async (t) => {
        await t.messages.insert(message("m1"));
        inserted();
        await held;
      });
      await written;
      const read = storage.messages.get("m1").then((row) => ({ row, whileOpen: open }));
      // PostgreSQL reads on another connection at once; SQLite's read waits for the transaction to end.
      if (storage.dialect === "postgres") expect((await read).row).toBeUndefined();
      open = false;
      release();
      await tx;
      const early = await read;
      // SQLite's read answered only after the commit, with the row; PostgreSQL's while open, without it.
      expect(early.whileOpen).toBe(storage.dialect === "postgres");
      expect(early.row?.id).toBe(early.whileOpen ? undefined : "m1");
      expect((await storage.messages.get("m1"))?.id).toBe("m1");
    });

    test("transactions that read and then write one row do not lose each other's update", async () => {
      const storage = await fresh();
      await ensureWorkflow(storage, "w");
      await Promise.all(
        Array.from({ length: 5 }, async (_, i) => {
          await storage.workflows.startRun({ id: `r${i}`, workflow: "w", trigger: "schedule", dryRun: false });
          await finishRun(storage, { id: `r${i}`, workflow: "w", dryRun: false, status: "error", handled: 0 });
        }),
      );
      expect((await storage.workflows.get("w"))?.failures).toBe(5);
    });

    test("concurrent inserts get distinct, increasing timestamps in the order they were stored", async () => {
      const storage = await fresh();
      const rows = await Promise.all(Array.from({ length: 20 }, (_, i) => storage.messages.insert(message(`m${i}`))));
      const stamps = rows.map((r) => r.row.timestamp);
      expect(new Set(stamps).size).toBe(20);
      const page = await storage.messages.history("+14155550123", 100, 0);
      expect(page.total).toBe(20);
      expect(page.rows.map((r) => r.timestamp)).toEqual([...stamps].sort((a, b) => b - a));
    });
  });

  test("a key's decision, waiting on a transaction that attaches its message, sees that message once it commits", async () => {
    const storage = await fresh();
    const claim = { scope: "s", key: "k" };
    await storage.idempotency.tryInsertPending(claim, "p", 60_000);
    let attached!: () => void;
    const ready = new Promise<void>((resolve) => (attached = resolve));
    const sending = storage.transaction(async (tx) => {
      await tx.messages.insert(message("m1"));
      await tx.idempotency.attach(claim, "m1", "{}");
      attached();
      await Bun.sleep(50);
    });
    await ready;
    const row = await storage.transaction((tx) => tx.idempotency.lockForDecision(claim, 60_000));
    await sending;
    expect(row).toMatchObject({ messageId: "m1", messageStatus: "queued" });
  });

  test("concurrent inserts of one network id store one message, and every caller gets that one", async () => {
    const storage = await fresh();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => storage.messages.insert({ ...message(`m${i}`), direction: "inbound", status: "received", networkId: "net-1" })),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.row.id)).size).toBe(1);
    expect((await storage.messages.history("+14155550123", 100, 0)).total).toBe(1);
  });

  test("a poller following the cursor misses nothing committed late: an insert waits for an earlier one's transaction", async () => {
    const storage = await fresh();
    // Two phones, so that nothing but the clock orders the two inserts.
    const inbound = (id: string, phone: string): NewMessage => ({ ...message(id), phone, direction: "inbound", status: "received" });
    const seen: string[] = [];
    let cursor = 0;
    const poll = async () => {
      for (const row of (await storage.messages.inboundAfter(cursor, 100)).rows) {
        seen.push(row.id);
        cursor = row.timestamp;
      }
    };
    let inserted!: () => void;
    const written = new Promise<void>((resolve) => (inserted = resolve));
    const slow = storage.transaction(async (tx) => {
      await tx.messages.insert(inbound("early", "+14155550123"));
      inserted();
      await Bun.sleep(100);
    });
    await written;
    const late = storage.messages.insert(inbound("late", "+442079460958"));
    let settled = false;
    const both = Promise.all([slow, late]).finally(() => (settled = true));
    while (!settled) {
      await poll();
      await Bun.sleep(5);
    }
    await both;
    await poll();
    expect(seen).toEqual(["early", "late"]);
  });

  describe("named leases", () => {
    test("one owner at a time; the owner extends it; free once released or expired", async () => {
      const { leases } = await fresh();
      expect(await leases.acquire("maintenance", "a", 1_500)).toBe(true);
      expect(await leases.acquire("maintenance", "b", 1_500)).toBe(false);
      expect(await leases.acquire("maintenance", "a", 1_500)).toBe(true);
      await leases.release("maintenance", "b");
      expect(await leases.acquire("maintenance", "b", 1_500)).toBe(false);
      await leases.release("maintenance", "a");
      expect(await leases.acquire("maintenance", "b", 1_500)).toBe(true);
      await Bun.sleep(1_600);
      expect(await leases.acquire("maintenance", "c", 60_000)).toBe(true);
      expect(await leases.acquire("other", "b", 60_000)).toBe(true);
    });

    test("of many owners taking a free lease at once, one gets it", async () => {
      const { leases } = await fresh();
      const won = await Promise.all(Array.from({ length: 8 }, (_, i) => leases.acquire("maintenance", `owner-${i}`, 60_000)));
      expect(won.filter(Boolean)).toHaveLength(1);
    });
  });

  test("network state: set replaces, per network and key", async () => {
    const { networkState } = await fresh();
    await networkState.set("bluebubbles", "catch-up", "1");
    await networkState.set("bluebubbles", "catch-up", "2");
    await networkState.set("twilio", "catch-up", "x");
    expect(await networkState.get("bluebubbles", "catch-up")).toBe("2");
    expect(await networkState.get("twilio", "catch-up")).toBe("x");
    expect(await networkState.get("twilio", "other")).toBeUndefined();
  });

  test("takesWrite answers true on a working database", async () => {
    expect(await (await fresh()).takesWrite()).toBe(true);
  });
});
