import { describe, expect, test } from "bun:test";
import { createMessageStore, type NewMessage } from "../../src/messages/store";
import { microClock } from "../../src/messages/time";
import { memoryDbs, storeWithClock } from "./helpers";

const A = "+14155550123";
const B = "+442079460958";

const freshDb = memoryDbs();
const setup = (start?: number) => storeWithClock(freshDb(), start);

let seq = 0;
function outbound(phone = A, body = "hello"): NewMessage {
  return { id: `out-${++seq}`, phone, body, direction: "outbound", status: "queued", network: "loopback", networkId: null };
}
function inbound(phone = A, body = "hi", networkId: string | null = null): NewMessage {
  return { id: `in-${++seq}`, phone, body, direction: "inbound", status: "received", network: "loopback", networkId };
}

describe("one clock: every stored timestamp is after all earlier ones, ≥ 1 µs apart", () => {
  test("100,000 messages stored in a tight loop on the real clock: strictly increasing, never 1 s ahead of the wall clock", () => {
    const store = createMessageStore(freshDb());
    let last = -1;
    let increasing = true;
    let maxAheadUs = 0;
    for (let i = 0; i < 100_000; i++) {
      const ts = store.insert(i % 2 ? inbound() : outbound()).row.timestamp;
      maxAheadUs = Math.max(maxAheadUs, ts - microClock());
      if (ts <= last) increasing = false;
      last = ts;
    }
    expect(increasing).toBe(true);
    expect(Number.isSafeInteger(last)).toBe(true);
    expect(maxAheadUs).toBeLessThan(1_000_000);
  }, 120_000);

  test("a moving clock is used as is", () => {
    const { store, clock } = setup(1_000_000);
    expect(store.insert(outbound()).row.timestamp).toBe(1_000_000);
    clock.t = 1_000_500;
    expect(store.insert(inbound()).row.timestamp).toBe(1_000_500);
  });

  test("a frozen clock still gives strictly increasing timestamps, 1 µs apart", () => {
    const { store } = setup(1_000_000);
    const stamps = Array.from({ length: 20 }, (_, i) => store.insert(i % 2 ? inbound() : outbound()).row.timestamp);
    expect(stamps[0]).toBe(1_000_000);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]! - stamps[i - 1]!).toBe(1);
  });

  test("a clock that goes backwards never makes a timestamp go backwards", () => {
    const { store, clock } = setup(1_000_000);
    const first = store.insert(outbound()).row.timestamp;
    clock.t = 500_000;
    const second = store.insert(inbound()).row.timestamp;
    clock.t = 0;
    const third = store.insert(outbound()).row.timestamp;
    expect(second).toBe(first + 1);
    expect(third).toBe(second + 1);
  });

  test("the stored row has the timestamp that insert returned", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    expect(store.get(row.id)).toEqual(row);
  });

  test("the clock is shared by inbound and outbound, and across phones", () => {
    const { store } = setup(5_000);
    const rows = [store.insert(outbound(A)), store.insert(inbound(B)), store.insert(inbound(A)), store.insert(outbound(B))];
    const stamps = rows.map((r) => r.row.timestamp);
    expect(new Set(stamps).size).toBe(4);
    expect([...stamps].sort((x, y) => x - y)).toEqual(stamps);
  });
});

describe("insert deduplicates by the network's own id", () => {
  test("the same network id twice stores one row and returns the first", () => {
    const { store, clock } = setup();
    const first = store.insert(inbound(A, "one", "net-1"));
    clock.t += 1000;
    const again = store.insert(inbound(A, "one", "net-1"));
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.row).toEqual(first.row);
    expect(store.history(A, 100, 0).total).toBe(1);
  });

  test("messages without a network id are never merged", () => {
    const { store } = setup();
    store.insert(inbound(A, "same"));
    store.insert(inbound(A, "same"));
    expect(store.history(A, 100, 0).total).toBe(2);
  });
});

describe("setStatus follows the status rule", () => {
  test("queued → sent → delivered", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    expect(store.setStatus(row.id, "sent", { networkId: "n-1" })).toBe(true);
    expect(store.get(row.id)?.status).toBe("sent");
    expect(store.get(row.id)?.networkId).toBe("n-1");
    expect(store.setStatus(row.id, "delivered")).toBe(true);
    expect(store.get(row.id)?.status).toBe("delivered");
  });

  test("a late sent after delivered is refused and leaves delivered", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    expect(store.setStatus(row.id, "delivered")).toBe(true);
    expect(store.setStatus(row.id, "sent")).toBe(false);
    expect(store.get(row.id)?.status).toBe("delivered");
  });

  test("failed is final and keeps its error", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    expect(store.setStatus(row.id, "failed", { error: "carrier said no" })).toBe(true);
    expect(store.setStatus(row.id, "delivered")).toBe(false);
    expect(store.setStatus(row.id, "sent", { error: null })).toBe(false);
    expect(store.get(row.id)).toMatchObject({ status: "failed", error: "carrier said no" });
  });

  test("delivered is not turned into failed", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    store.setStatus(row.id, "delivered");
    expect(store.setStatus(row.id, "failed", { error: "late failure" })).toBe(false);
    expect(store.get(row.id)).toMatchObject({ status: "delivered", error: null });
  });

  test("no backward move from sent to queued", () => {
    const { store } = setup();
    const { row } = store.insert(outbound());
    store.setStatus(row.id, "sent");
    expect(store.setStatus(row.id, "queued")).toBe(false);
    expect(store.get(row.id)?.status).toBe("sent");
  });

  test("an unknown id changes nothing", () => {
    const { store } = setup();
    expect(store.setStatus("no-such-id", "delivered")).toBe(false);
  });

  test("a status change does not change the message's timestamp", () => {
    const { store, clock } = setup();
    const { row } = store.insert(outbound());
    clock.t += 60_000;
    store.setStatus(row.id, "delivered");
    expect(store.get(row.id)?.timestamp).toBe(row.timestamp);
  });
});

describe("outbound messages not final: the stale sweep and reconciliation", () => {
  test("the stale-queued sweep leaves the queued sends of a network that reconciles them", () => {
    const { store, clock } = setup(1_000_000);
    const bb = store.insert({ ...outbound(), network: "bluebubbles" }).row;
    const lb = store.insert(outbound()).row;
    clock.t += 10 * 60_000 * 1000; // the store's clock counts microseconds
    expect(store.failStaleQueued(2 * 60_000, "bluebubbles")).toBe(1);
    expect(store.get(bb.id)!.status).toBe("queued");
    expect(store.get(lb.id)!.status).toBe("failed");
  });

  test("pendingOutbound lists queued and sent messages of one network unchanged for a while, oldest check first; markChecked moves them back", () => {
    const { store, clock } = setup(1_000_000);
    const net = (status: "queued" | "sent" | "delivered") => ({ ...outbound(), network: "bluebubbles", status });
    const q = store.insert(net("queued")).row;
    const s = store.insert(net("sent")).row;
    store.insert(net("delivered"));
    store.insert(outbound());
    expect(store.pendingOutbound("bluebubbles", 60_000, 86_400_000, 10)).toEqual([]);
    clock.t += 2 * 60_000 * 1000; // the store's clock counts microseconds
    expect(store.pendingOutbound("bluebubbles", 60_000, 86_400_000, 10).map((p) => [p.id, p.status])).toEqual([
      [q.id, "queued"],
      [s.id, "sent"],
    ]);
    expect(store.pendingOutbound("bluebubbles", 60_000, 86_400_000, 1).map((p) => p.id)).toEqual([q.id]);
    store.markChecked([q.id]);
    expect(store.pendingOutbound("bluebubbles", 60_000, 86_400_000, 10).map((p) => p.id)).toEqual([s.id]);
    // Outside the window: not asked about any more.
    clock.t += 2 * 86_400_000 * 1000;
    expect(store.pendingOutbound("bluebubbles", 60_000, 86_400_000, 10)).toEqual([]);
  });
});
