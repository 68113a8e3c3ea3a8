import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { NewMessage } from "../../src/db/port";
import { microClock } from "../../src/vocabulary/time";
import { clockDialects, dialects, manualClock, storages, type TestDialect } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const A = "+14155550123";
const B = "+442079460958";

/** The message repository of a fresh storage; on a dialect with a movable clock, on a clock the test moves (µs). */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async (start?: number) => {
    const clock = manualClock(start);
    const storage = await fresh(dialect.movableClock ? { clock: clock.now } : {});
    return { store: storage.messages, clock };
  };
}

let seq = 0;
function outbound(phone = A, body = "hello"): NewMessage {
  return { id: `out-${++seq}`, phone, body, direction: "outbound", status: "queued", network: "loopback", networkId: null };
}
function inbound(phone = A, body = "hi", networkId: string | null = null): NewMessage {
  return { id: `in-${++seq}`, phone, body, direction: "inbound", status: "received", network: "loopback", networkId };
}

describe.each(dialects)("one clock on $name", (dialect) => {
  const fresh = storages(dialect);
  // Each PostgreSQL insert is a round trip and a commit: fewer of them keep the test short.
  const count = dialect.name === "sqlite" ? 100_000 : 3_000;

  test(`${count.toLocaleString("en")} messages stored in a tight loop on the real clock: strictly increasing, never 1 s ahead of the wall clock`, async () => {
    const store = (await fresh()).messages;
    let last = -1;
    let increasing = true;
    let maxAheadUs = 0;
    for (let i = 0; i < count; i++) {
      const ts = (await store.insert(i % 2 ? inbound() : outbound())).row.timestamp;
      maxAheadUs = Math.max(maxAheadUs, ts - microClock());
      if (ts <= last) increasing = false;
      last = ts;
    }
    expect(increasing).toBe(true);
    expect(Number.isSafeInteger(last)).toBe(true);
    expect(maxAheadUs).toBeLessThan(1_000_000);
  }, 120_000);
});

describe.each(clockDialects)("one clock on $name: every stored timestamp is after all earlier ones, ≥ 1 µs apart", (dialect) => {
  const setup = setups(dialect);

  test("a moving clock is used as is", async () => {
    const { store, clock } = await setup(1_000_000);
    expect((await store.insert(outbound())).row.timestamp).toBe(1_000_000);
    clock.t = 1_000_500;
    expect((await store.insert(inbound())).row.timestamp).toBe(1_000_500);
  });

  test("a frozen clock still gives strictly increasing timestamps, 1 µs apart", async () => {
    const { store } = await setup(1_000_000);
    const stamps: number[] = [];
    for (let i = 0; i < 20; i++) stamps.push((await store.insert(i % 2 ? inbound() : outbound())).row.timestamp);
    expect(stamps[0]).toBe(1_000_000);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]! - stamps[i - 1]!).toBe(1);
  });

  test("a clock that goes backwards never makes a timestamp go backwards", async () => {
    const { store, clock } = await setup(1_000_000);
    const first = (await store.insert(outbound())).row.timestamp;
    clock.t = 500_000;
    const second = (await store.insert(inbound())).row.timestamp;
    clock.t = 0;
    const third = (await store.insert(outbound())).row.timestamp;
    expect(second).toBe(first + 1);
    expect(third).toBe(second + 1);
  });

  test("the stored row has the timestamp that insert returned", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    expect(await store.get(row.id)).toEqual(row);
  });

  test("the clock is shared by inbound and outbound, and across phones", async () => {
    const { store } = await setup(5_000);
    const rows = [await store.insert(outbound(A)), await store.insert(inbound(B)), await store.insert(inbound(A)), await store.insert(outbound(B))];
    const stamps = rows.map((r) => r.row.timestamp);
    expect(new Set(stamps).size).toBe(4);
    expect([...stamps].sort((x, y) => x - y)).toEqual(stamps);
  });
});

describe.each(dialects)("on $name, insert deduplicates by the network's own id", (dialect) => {
  const setup = setups(dialect);

  test("the same network id twice stores one row and returns the first", async () => {
    const { store, clock } = await setup();
    const first = await store.insert(inbound(A, "one", "net-1"));
    clock.t += 1000;
    const again = await store.insert(inbound(A, "one", "net-1"));
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.row).toEqual(first.row);
    expect((await store.history(A, 100, 0)).total).toBe(1);
  });

  test("messages without a network id are never merged", async () => {
    const { store } = await setup();
    await store.insert(inbound(A, "same"));
    await store.insert(inbound(A, "same"));
    expect((await store.history(A, 100, 0)).total).toBe(2);
  });
});

describe.each(dialects)("on $name, setStatus follows the status rule", (dialect) => {
  const setup = setups(dialect);

  test("queued → sent → delivered", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    expect(await store.setStatus(row.id, "sent", { networkId: "n-1" })).toBe(true);
    expect((await store.get(row.id))?.status).toBe("sent");
    expect((await store.get(row.id))?.networkId).toBe("n-1");
    expect(await store.setStatus(row.id, "delivered")).toBe(true);
    expect((await store.get(row.id))?.status).toBe("delivered");
  });

  test("a late sent after delivered is refused and leaves delivered", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    expect(await store.setStatus(row.id, "delivered")).toBe(true);
    expect(await store.setStatus(row.id, "sent")).toBe(false);
    expect((await store.get(row.id))?.status).toBe("delivered");
  });

  test("failed is final and keeps its error", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    expect(await store.setStatus(row.id, "failed", { error: "carrier said no" })).toBe(true);
    expect(await store.setStatus(row.id, "delivered")).toBe(false);
    expect(await store.setStatus(row.id, "sent", { error: null })).toBe(false);
    expect(await store.get(row.id)).toMatchObject({ status: "failed", error: "carrier said no" });
  });

  test("delivered is not turned into failed", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    await store.setStatus(row.id, "delivered");
    expect(await store.setStatus(row.id, "failed", { error: "late failure" })).toBe(false);
    expect(await store.get(row.id)).toMatchObject({ status: "delivered", error: null });
  });

  test("no backward move from sent to queued", async () => {
    const { store } = await setup();
    const { row } = await store.insert(outbound());
    await store.setStatus(row.id, "sent");
    expect(await store.setStatus(row.id, "queued")).toBe(false);
    expect((await store.get(row.id))?.status).toBe("sent");
  });

  test("an unknown id changes nothing", async () => {
    const { store } = await setup();
    expect(await store.setStatus("no-such-id", "delivered")).toBe(false);
  });

  test("a status change does not change the message's timestamp", async () => {
    const { store, clock } = await setup();
    const { row } = await store.insert(outbound());
    clock.t += 60_000;
    await store.setStatus(row.id, "delivered");
    expect((await store.get(row.id))?.timestamp).toBe(row.timestamp);
  });
});

describe.each(clockDialects)("on $name, outbound messages not final: the stale sweep and reconciliation", (dialect) => {
  const setup = setups(dialect);

  test("the stale-queued sweep leaves the queued sends of the lines that reconcile them", async () => {
    const { store, clock } = await setup(1_000_000);
    const bb = (await store.insert({ ...outbound(), network: "bluebubbles", lineId: "ln_bb" })).row;
    const lb = (await store.insert(outbound())).row;
    clock.t += 10 * 60_000 * 1000; // the store's clock counts microseconds
    expect(await store.failStaleQueued(2 * 60_000, "interrupted", ["ln_bb"])).toEqual([lb.network]);
    expect((await store.get(bb.id))!.status).toBe("queued");
    expect((await store.get(lb.id))!.status).toBe("failed");
  });

  test("pendingOutbound lists queued and sent messages of one line unchanged for a while, oldest check first; markChecked moves them back", async () => {
    const { store, clock } = await setup(1_000_000);
    const net = (status: "queued" | "sent" | "delivered") => ({ ...outbound(), network: "bluebubbles", lineId: "ln_bb", status });
    const q = (await store.insert(net("queued"))).row;
    const s = (await store.insert(net("sent"))).row;
    await store.insert(net("delivered"));
    await store.insert(outbound());
    expect(await store.pendingOutbound("ln_bb", 60_000, 86_400_000, 10)).toEqual([]);
    clock.t += 2 * 60_000 * 1000; // the store's clock counts microseconds
    expect((await store.pendingOutbound("ln_bb", 60_000, 86_400_000, 10)).map((p) => [p.id, p.status])).toEqual([
      [q.id, "queued"],
      [s.id, "sent"],
    ]);
    expect((await store.pendingOutbound("ln_bb", 60_000, 86_400_000, 1)).map((p) => p.id)).toEqual([q.id]);
    await store.markChecked([q.id]);
    expect((await store.pendingOutbound("ln_bb", 60_000, 86_400_000, 10)).map((p) => p.id)).toEqual([s.id]);
    // Outside the window: not asked about any more.
    clock.t += 2 * 86_400_000 * 1000;
    expect(await store.pendingOutbound("ln_bb", 60_000, 86_400_000, 10)).toEqual([]);
  });
});
