// The events and outbound webhooks storage (src/db/port.ts, WebhookRepository) on every
// dialect: events written by the database with the change they report and queued for each
// subscribed endpoint, the cursor over events, endpoints, leased claims and attempts,
// replays and retention.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { EventType } from "../../src/vocabulary/events";
import type { DeliveryRow, NewMessage, Storage } from "../../src/db/port";
import { openPostgresStorage, type PostgresStorage } from "../../src/db/postgres/storage";
import { describePostgres } from "../support/postgres";
import { dialects, inboundRow, outboundRow, rejectionOf, storages, type TestDialect } from "./helpers";

// A real database, PostgreSQL too: slower than bun's 5 s default allows on a loaded machine.
setDefaultTimeout(30_000);

const PHONE = "+14155550123";
/** On a whole millisecond, so events a few µs after it are still due at it. */
const START_MS = Date.UTC(2026, 10, 21, 9, 30);

const inbound = (networkId: string | null = null): NewMessage => inboundRow({ phone: PHONE, networkId });
/** What maintenance purges of the delivery log: deliveries first (one purged no longer keeps its event), then events. */
const purgeWebhookLog = async (storage: Storage, ageMs: number) => ({
  deliveries: await storage.retention.purge("webhook_deliveries", ageMs, 100),
  events: await storage.retention.purge("events", ageMs, 100),
});
const outbound = (): NewMessage => outboundRow({ phone: PHONE });

/**
 * A fresh storage and `pass(ms)`, which lets that much time go by: on SQLite the test's
 * clock moves; on PostgreSQL (the database's clock) the test waits a little longer.
 */
function setups(dialect: TestDialect) {
  const fresh = storages(dialect);
  return async () => {
    let ms = START_MS;
    const storage = await fresh(dialect.movableClock ? { clock: () => ms * 1000 } : {});
    const pass = async (by: number) => {
      if (dialect.movableClock) ms += by;
      else await Bun.sleep(by + 5);
    };
    let endpoints = 0;
    const endpoint = (events: EventType[] | null = null) =>
      storage.webhooks.createEndpoint({ id: `we_${++endpoints}`, url: `https://example.com/hook/${endpoints}`, events, description: null, secret: `whsec_${endpoints}` });
    /** Every delivery of the endpoint, oldest first. */
    const deliveriesOf = async (endpointId: string): Promise<DeliveryRow[]> => (await storage.webhooks.deliveries(endpointId, 1000)).reverse();
    const allEvents = async () => (await storage.webhooks.events(0, 1000)).rows;
    return { storage, pass, endpoint, deliveriesOf, allEvents };
  };
}

describe.each(dialects)("events written by the database on $name", (dialect) => {
  const setup = setups(dialect);

  test("an inbound message makes one event and one delivery per enabled endpoint subscribed to it", async () => {
    const { storage, endpoint, deliveriesOf, allEvents } = await setup();
    const all = await endpoint();
    const received = await endpoint(["message.received"]);
    const other = await endpoint(["workflow.run_failed"]);
    const off = await endpoint();
    await storage.webhooks.updateEndpoint(off.id, { enabled: false });
    const { row } = await storage.messages.insert(inbound());
    const events = await allEvents();
    expect(events).toEqual([
      {
        id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
        type: "message.received",
        timestamp: expect.any(Number),
        message: { id: row.id, phone: PHONE, body: "hi", direction: "inbound", status: "received", timestamp: row.timestamp, error: null, replyTo: null, sendAt: null, mediaCount: 0,
          reactionCount: 0, readAt: null, editedAt: null, unsentAt: null, chatId: null, lineId: "ln_default" },
        previousStatus: null,
        data: null,
      },
    ]);
    expect(events[0]!.timestamp).toBeGreaterThanOrEqual(row.timestamp);
    for (const e of [all, received]) {
      expect(await deliveriesOf(e.id)).toEqual([
        {
          id: expect.stringMatching(/^dlv_[0-9a-f]{32}$/),
          endpointId: e.id,
          eventId: events[0]!.id,
          eventType: "message.received",
          state: "pending",
          attempts: 0,
          lastStatus: null,
          lastError: null,
          lastAttemptAt: null,
          nextAttemptAt: expect.any(Number),
          createdAt: expect.any(Number),
        },
      ]);
    }
    expect(await deliveriesOf(other.id)).toEqual([]);
    expect(await deliveriesOf(off.id)).toEqual([]);
  });

  test("an outbound message stored makes no event; a duplicate inbound (same network id) makes none", async () => {
    const { storage, endpoint, deliveriesOf, allEvents } = await setup();
    const e = await endpoint();
    await storage.messages.insert(outbound());
    expect(await allEvents()).toEqual([]);
    expect((await storage.messages.insert(inbound("net-1"))).created).toBe(true);
    expect((await storage.messages.insert(inbound("net-1"))).created).toBe(false);
    expect(await allEvents()).toHaveLength(1);
    expect(await deliveriesOf(e.id)).toHaveLength(1);
  });

  test("an applied status change makes an event with the previous status; a refused report makes none", async () => {
    const { storage, endpoint, deliveriesOf, allEvents } = await setup();
    const e = await endpoint(["message.status_updated"]);
    const { row } = await storage.messages.insert(outbound());
    expect(await storage.messages.setStatus(row.id, "sent")).toBe(true);
    expect(await storage.messages.setStatus(row.id, "failed", { error: "carrier said no" })).toBe(true);
    // Late and backwards reports: the status rule refuses them.
    expect(await storage.messages.setStatus(row.id, "delivered")).toBe(false);
    expect(await storage.messages.setStatus(row.id, "queued")).toBe(false);
    const events = await allEvents();
    expect(events.map((ev) => (!("message" in ev) ? ev.type : [ev.type, ev.previousStatus, ev.message.status, ev.message.error]))).toEqual([
      ["message.status_updated", "queued", "sent", null],
      ["message.status_updated", "sent", "failed", "carrier said no"],
    ]);
    expect(events[0]!.timestamp).toBeLessThan(events[1]!.timestamp);
    expect((await deliveriesOf(e.id)).map((d) => d.eventId)).toEqual(events.map((ev) => ev.id));
  });

  test("the stale-queued sweep makes one event per message it fails", async () => {
    const { storage, pass, allEvents } = await setup();
    const a = (await storage.messages.insert(outbound())).row;
    const b = (await storage.messages.insert(outbound())).row;
    await pass(10);
    expect(await storage.messages.failStaleQueued(1, "interrupted", [])).toHaveLength(2);
    const events = await allEvents();
    expect(events.map((ev) => ev.type === "message.status_updated" && [ev.message.id, ev.previousStatus, ev.message.status, ev.message.error]).sort()).toEqual(
      [
        [a.id, "queued", "failed", "interrupted"],
        [b.id, "queued", "failed", "interrupted"],
      ].sort(),
    );
    expect(new Set(events.map((ev) => ev.timestamp)).size).toBe(2);
  });

  test("a real run that fails makes one event with the run; a dry run or a run that succeeds makes none", async () => {
    const { storage, endpoint, deliveriesOf, allEvents } = await setup();
    const e = await endpoint(["workflow.run_failed"]);
    await storage.workflows.create("w", 0);
    const runs = [
      { id: "r-error", dryRun: false, status: "error" as const },
      { id: "r-timeout", dryRun: false, status: "timeout" as const },
      { id: "r-ok", dryRun: false, status: "ok" as const },
      { id: "r-dry", dryRun: true, status: "error" as const },
    ];
    for (const r of runs) {
      await storage.workflows.startRun({ id: r.id, workflow: "w", trigger: "schedule", dryRun: r.dryRun });
      await storage.workflows.endRun(r.id, { status: r.status, error: r.status === "ok" ? null : "boom", handled: 2 });
    }
    // Ending a run again (not from running) writes nothing more.
    await storage.workflows.endRun("r-error", { status: "error", error: "again", handled: 2 });
    const events = await allEvents();
    expect(events.map((ev) => ev.type === "workflow.run_failed" && ev.run.id)).toEqual(["r-error", "r-timeout"]);
    expect(events[0]).toMatchObject({
      type: "workflow.run_failed",
      run: { id: "r-error", workflow: "w", trigger: "schedule", dryRun: false, status: "error", error: "again", handled: 2, startedAt: expect.any(Number), endedAt: expect.any(Number) },
    });
    expect(await deliveriesOf(e.id)).toHaveLength(2);

    // A real run a dead process left running, ended by the next process, failed too; a dry one is not reported.
    await storage.workflows.startRun({ id: "r-left", workflow: "w", trigger: "schedule", dryRun: false });
    await storage.workflows.startRun({ id: "r-left-dry", workflow: "w", trigger: "schedule", dryRun: true });
    expect(await storage.workflows.endInterruptedRuns("w", "interrupted")).toBe(1);
    expect((await allEvents()).map((ev) => ev.type === "workflow.run_failed" && [ev.run.id, ev.run.error])).toEqual([
      ["r-error", "again"],
      ["r-timeout", "boom"],
      ["r-left", "interrupted"],
    ]);
  });

  test("an event written in a transaction that throws is gone with the change", async () => {
    const { storage, endpoint, deliveriesOf, allEvents } = await setup();
    const e = await endpoint();
    const err = await rejectionOf(
      storage.transaction(async (tx) => {
        await tx.messages.insert(inbound());
        expect((await tx.webhooks.events(0, 10)).rows).toHaveLength(1);
        throw new Error("changed my mind");
      }),
    );
    expect(String(err)).toContain("changed my mind");
    expect(await allEvents()).toEqual([]);
    expect(await deliveriesOf(e.id)).toEqual([]);
    expect(await dialect.rows(storage, "SELECT id FROM webhook_deliveries")).toEqual([]);
  });

  test("events(): oldest first after the cursor, has_more exact, filtered by type", async () => {
    const { storage } = await setup();
    const out = (await storage.messages.insert(outbound())).row;
    await storage.messages.insert(inbound());
    await storage.messages.setStatus(out.id, "sent");
    await storage.messages.insert(inbound());
    await storage.workflows.create("w", 0);
    await storage.workflows.startRun({ id: "r1", workflow: "w", trigger: "manual", dryRun: false });
    await storage.workflows.endRun("r1", { status: "error", error: "boom", handled: 0 });

    const all = await storage.webhooks.events(0, 10);
    expect(all.hasMore).toBe(false);
    expect(all.rows.map((ev) => ev.type)).toEqual(["message.received", "message.status_updated", "message.received", "workflow.run_failed"]);
    const stamps = all.rows.map((ev) => ev.timestamp);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    expect(new Set(stamps).size).toBe(4);

    const first = await storage.webhooks.events(0, 2);
    expect(first).toEqual({ rows: all.rows.slice(0, 2), hasMore: true });
    const second = await storage.webhooks.events(first.rows[1]!.timestamp, 2);
    expect(second).toEqual({ rows: all.rows.slice(2), hasMore: false });
    expect(await storage.webhooks.events(stamps[3]!, 2)).toEqual({ rows: [], hasMore: false });

    const received = await storage.webhooks.events(0, 1, "message.received");
    expect(received).toEqual({ rows: [all.rows[0]!], hasMore: true });
    expect(await storage.webhooks.events(received.rows[0]!.timestamp, 1, "message.received")).toEqual({ rows: [all.rows[2]!], hasMore: false });
    expect((await storage.webhooks.events(0, 10, "workflow.run_failed")).rows).toEqual([all.rows[3]!]);
  });

  test("runs an event refers to outlive the runs purge", async () => {
    const { storage, pass } = await setup();
    await storage.workflows.create("w", 0);
    for (const [id, status] of [["r-ok", "ok"], ["r-failed", "error"]] as const) {
      await storage.workflows.startRun({ id, workflow: "w", trigger: "schedule", dryRun: false });
      await storage.workflows.endRun(id, { status, error: null, handled: 0 });
    }
    await pass(20);
    expect(await storage.retention.purge("workflow_runs", 10, 10)).toBe(1);
    expect((await storage.workflows.recentRuns("w", 10)).map((r) => r.id)).toEqual(["r-failed"]);
  });
});

describe.each(dialects)("webhook endpoints on $name", (dialect) => {
  const setup = setups(dialect);

  test("created enabled, listed oldest first, read, patched, deleted with their deliveries", async () => {
    const { storage, pass, endpoint } = await setup();
    const a = await storage.webhooks.createEndpoint({ id: "we_a", url: "https://a.example/hook", events: ["message.received"], description: "mine", secret: "whsec_a" });
    expect(a).toEqual({
      id: "we_a",
      url: "https://a.example/hook",
      events: ["message.received"],
      description: "mine",
      enabled: true,
      disabledReason: null,
      secret: "whsec_a",
      previousSecret: null,
      previousSecretUntil: null,
      failingSince: null,
      createdAt: expect.any(Number),
      updatedAt: a.createdAt,
    });
    await pass(1);
    const b = await endpoint();
    expect(b.events).toBeNull();
    expect((await storage.webhooks.listEndpoints()).map((e) => e.id)).toEqual(["we_a", b.id]);
    expect(await storage.webhooks.getEndpoint("we_a")).toEqual(a);
    expect(await storage.webhooks.getEndpoint("we_none")).toBeUndefined();

    expect(await storage.webhooks.updateEndpoint("we_a", { url: "https://a.example/v2" })).toMatchObject({ url: "https://a.example/v2", events: ["message.received"], description: "mine" });
    expect(await storage.webhooks.updateEndpoint("we_a", { events: null, description: null })).toMatchObject({ url: "https://a.example/v2", events: null, description: null });
    expect(await storage.webhooks.updateEndpoint("we_a", { events: ["workflow.run_failed", "message.received"] })).toMatchObject({ events: ["workflow.run_failed", "message.received"] });
    expect(await storage.webhooks.updateEndpoint("we_none", { enabled: false })).toBeUndefined();

    await storage.messages.insert(inbound());
    expect(await storage.webhooks.deliveries("we_a", 10)).toHaveLength(1);
    expect(await storage.webhooks.deleteEndpoint("we_a")).toBe(true);
    expect(await storage.webhooks.deleteEndpoint("we_a")).toBe(false);
    expect(await dialect.rows(storage, "SELECT endpoint_id FROM webhook_deliveries")).toEqual([{ endpoint_id: b.id }]);
  });

  test("rotateSecret keeps the previous secret for a while", async () => {
    const { storage, endpoint } = await setup();
    const e = await endpoint();
    const rotated = await storage.webhooks.rotateSecret(e.id, "whsec_new", 86_400_000);
    expect(rotated).toMatchObject({ secret: "whsec_new", previousSecret: e.secret });
    expect(rotated!.previousSecretUntil! - rotated!.updatedAt).toBe(86_400_000);
    expect(await storage.webhooks.rotateSecret("we_none", "whsec_x", 1)).toBeUndefined();
  });

  test("disabled by Textwire with a reason; a client's enabling clears the reason and the failures, disabling sets no reason", async () => {
    const { storage, endpoint } = await setup();
    const e = await endpoint();
    await storage.webhooks.markFailing(e.id, 60_000);
    await storage.webhooks.disableEndpoint(e.id, "gone");
    expect(await storage.webhooks.getEndpoint(e.id)).toMatchObject({ enabled: false, disabledReason: "gone", failingSince: expect.any(Number) });
    expect(await storage.webhooks.updateEndpoint(e.id, { enabled: true })).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    await storage.webhooks.disableEndpoint(e.id, "failing");
    expect(await storage.webhooks.updateEndpoint(e.id, { enabled: false })).toMatchObject({ enabled: false, disabledReason: null });
  });

  test("markFailing notes the first failure, disables after disableAfterMs of failures; markSucceeding starts over", async () => {
    const { storage, pass, endpoint } = await setup();
    const e = await endpoint();
    expect(await storage.webhooks.markFailing(e.id, 20)).toBe(false);
    const since = (await storage.webhooks.getEndpoint(e.id))!.failingSince!;
    expect(since).toBeGreaterThanOrEqual(e.createdAt);
    expect(await storage.webhooks.markFailing(e.id, 60_000)).toBe(false);
    expect((await storage.webhooks.getEndpoint(e.id))!.failingSince).toBe(since);
    await storage.webhooks.markSucceeding(e.id);
    expect((await storage.webhooks.getEndpoint(e.id))!.failingSince).toBeNull();

    expect(await storage.webhooks.markFailing(e.id, 20)).toBe(false);
    await pass(30);
    expect(await storage.webhooks.markFailing(e.id, 20)).toBe(true);
    expect(await storage.webhooks.getEndpoint(e.id)).toMatchObject({ enabled: false, disabledReason: "failing" });
  });
});

describe.each(dialects)("deliveries on $name", (dialect) => {
  const setup = setups(dialect);

  test("claimDue leases due deliveries with their endpoint and event; another owner gets none while leased, and may once it expires", async () => {
    const { storage, pass, endpoint } = await setup();
    const e = await endpoint();
    const { row } = await storage.messages.insert(inbound());
    const claimed = await storage.webhooks.claimDue("p1", 60_000, 10, 10, []);
    expect(claimed).toHaveLength(1);
    expect(claimed[0]!.endpoint).toEqual(e);
    expect(claimed[0]!.event).toMatchObject({ type: "message.received", message: { id: row.id, body: "hi" } });
    expect(claimed[0]!.delivery).toMatchObject({ endpointId: e.id, eventId: claimed[0]!.event.id, state: "pending", attempts: 0 });
    expect(await storage.webhooks.claimDue("p2", 60_000, 10, 10, [])).toEqual([]);
    expect(await storage.webhooks.claimDue("p1", 60_000, 10, 10, [])).toEqual([]);

    await storage.messages.insert(inbound());
    const short = await storage.webhooks.claimDue("p1", 1, 10, 10, []);
    expect(short).toHaveLength(1);
    await pass(10);
    expect((await storage.webhooks.claimDue("p2", 60_000, 10, 10, [])).map((c) => c.delivery.id)).toEqual([short[0]!.delivery.id]);
    // The first owner lost it: its attempt is not recorded.
    expect(await storage.webhooks.recordAttempt(short[0]!.delivery.id, "p1", { state: "succeeded", status: 200, error: null })).toBe(false);
    expect(await storage.webhooks.recordAttempt(short[0]!.delivery.id, "p2", { state: "succeeded", status: 200, error: null })).toBe(true);
  });

  test("claimDue takes at most perEndpoint of one endpoint and at most limit, earliest first, skipping the endpoints given and disabled ones", async () => {
    const { storage, endpoint } = await setup();
    const a = await endpoint();
    const b = await endpoint();
    const c = await endpoint();
    for (let i = 0; i < 5; i++) await storage.messages.insert(inbound());
    await storage.webhooks.updateEndpoint(c.id, { enabled: false });

    const first = await storage.webhooks.claimDue("p", 60_000, 10, 2, [b.id]);
    expect(first.map((x) => x.delivery.endpointId)).toEqual([a.id, a.id]);
    const events = (await storage.webhooks.events(0, 10)).rows;
    expect(first.map((x) => x.event.id)).toEqual([events[0]!.id, events[1]!.id]);

    const second = await storage.webhooks.claimDue("p", 60_000, 3, 2, []);
    expect(second).toHaveLength(3);
    expect(second.filter((x) => x.delivery.endpointId === a.id).length).toBeLessThanOrEqual(2);
    expect(second.filter((x) => x.delivery.endpointId === b.id).length).toBeLessThanOrEqual(2);
    expect(second.some((x) => x.delivery.endpointId === c.id)).toBe(false);

    const rest = await storage.webhooks.claimDue("p", 60_000, 100, 100, []);
    expect(rest).toHaveLength(10 - 2 - 3);
    expect(rest.some((x) => x.delivery.endpointId === c.id)).toBe(false);
    // Enabled again, its pending deliveries are due.
    await storage.webhooks.updateEndpoint(c.id, { enabled: true });
    expect(await storage.webhooks.claimDue("p", 60_000, 100, 100, [])).toHaveLength(5);
  });

  test("recordAttempt: only the owner records; a retry is due after retryInMs, a final state has no next attempt", async () => {
    const { storage, pass, endpoint, deliveriesOf } = await setup();
    const e = await endpoint();
    await storage.messages.insert(inbound());
    const [claim] = await storage.webhooks.claimDue("p1", 60_000, 10, 10, []);
    const id = claim!.delivery.id;
    expect(await storage.webhooks.recordAttempt(id, "p2", { state: "failed", status: 500, error: "HTTP 500" })).toBe(false);
    expect(await storage.webhooks.recordAttempt(id, "p1", { state: "pending", status: 500, error: "HTTP 500", retryInMs: 3_600_000 })).toBe(true);
    // The lease is let go: the owner cannot record twice.
    expect(await storage.webhooks.recordAttempt(id, "p1", { state: "succeeded", status: 200, error: null })).toBe(false);
    const [retrying] = await deliveriesOf(e.id);
    expect(retrying!.nextAttemptAt! - retrying!.lastAttemptAt!).toBe(3_600_000);
    expect(retrying).toMatchObject({ state: "pending", attempts: 1, lastStatus: 500, lastError: "HTTP 500" });
    expect(await storage.webhooks.claimDue("p1", 60_000, 10, 10, [])).toEqual([]);

    // Due again once retryInMs has passed.
    await storage.webhooks.retryNow(e.id, id);
    await storage.webhooks.claimDue("p1", 60_000, 10, 10, []);
    expect(await storage.webhooks.recordAttempt(id, "p1", { state: "pending", status: 500, error: "HTTP 500", retryInMs: 1 })).toBe(true);
    await pass(10);
    const [again] = await storage.webhooks.claimDue("p2", 60_000, 10, 10, []);
    expect(again!.delivery).toMatchObject({ id, attempts: 1 });
    expect(await storage.webhooks.recordAttempt(id, "p2", { state: "failed", status: null, error: "connection refused" })).toBe(true);
    expect((await deliveriesOf(e.id))[0]).toMatchObject({ state: "failed", attempts: 2, lastStatus: null, lastError: "connection refused", nextAttemptAt: null });
    expect(await storage.webhooks.claimDue("p2", 60_000, 10, 10, [])).toEqual([]);
    expect(await storage.webhooks.deliveries(e.id, 10, "failed")).toHaveLength(1);
    expect(await storage.webhooks.deliveries(e.id, 10, "pending")).toEqual([]);
  });

  test("deliveries(): newest first, at most limit", async () => {
    const { storage, endpoint } = await setup();
    const e = await endpoint();
    for (let i = 0; i < 3; i++) await storage.messages.insert(inbound());
    const events = (await storage.webhooks.events(0, 10)).rows;
    expect((await storage.webhooks.deliveries(e.id, 2)).map((d) => d.eventId)).toEqual([events[2]!.id, events[1]!.id]);
  });

  test("replay queues again the endpoint's subscribed events since a time, a new series each; an endpoint made later gets them too", async () => {
    const { storage, endpoint, deliveriesOf } = await setup();
    const e = await endpoint(["message.received"]);
    const out = (await storage.messages.insert(outbound())).row;
    await storage.messages.insert(inbound());
    await storage.messages.setStatus(out.id, "sent");
    await storage.messages.insert(inbound());
    for (const c of await storage.webhooks.claimDue("p", 60_000, 10, 10, [])) {
      await storage.webhooks.recordAttempt(c.delivery.id, "p", { state: "failed", status: 500, error: "HTTP 500" });
    }
    expect((await deliveriesOf(e.id)).map((d) => d.state)).toEqual(["failed", "failed"]);

    expect(await storage.webhooks.replay(e.id, 0)).toBe(2);
    expect((await deliveriesOf(e.id)).map((d) => [d.state, d.attempts, d.eventType])).toEqual([
      ["pending", 0, "message.received"],
      ["pending", 0, "message.received"],
    ]);
    expect(await storage.webhooks.claimDue("p", 60_000, 10, 10, [])).toHaveLength(2);
    // A replay takes a leased delivery back too.
    const events = (await storage.webhooks.events(0, 10, "message.received")).rows;
    expect(await storage.webhooks.replay(e.id, events[0]!.timestamp)).toBe(1);
    expect((await storage.webhooks.claimDue("q", 60_000, 10, 10, [])).map((c) => c.event.id)).toEqual([events[1]!.id]);

    const later = await endpoint();
    expect(await storage.webhooks.replay(later.id, 0)).toBe(3);
    expect(await deliveriesOf(later.id)).toHaveLength(3);
    expect(await storage.webhooks.replay("we_none", 0)).toBe(0);
  });

  test("retryNow makes one failed delivery of that endpoint pending and due now, a new series", async () => {
    const { storage, endpoint } = await setup();
    const e = await endpoint();
    const other = await endpoint();
    await storage.messages.insert(inbound());
    const [claim] = await storage.webhooks.claimDue("p", 60_000, 10, 1, [other.id]);
    await storage.webhooks.recordAttempt(claim!.delivery.id, "p", { state: "failed", status: 410, error: "HTTP 410" });
    expect(await storage.webhooks.retryNow(other.id, claim!.delivery.id)).toBeUndefined();
    expect(await storage.webhooks.retryNow(e.id, "dlv_none")).toBeUndefined();
    const retried = await storage.webhooks.retryNow(e.id, claim!.delivery.id);
    expect(retried).toMatchObject({ id: claim!.delivery.id, endpointId: e.id, eventType: "message.received", state: "pending", attempts: 0, lastStatus: 410 });
    expect((await storage.webhooks.claimDue("p", 60_000, 10, 10, [other.id])).map((c) => c.delivery.id)).toEqual([claim!.delivery.id]);
  });

  test("the retention purge drops settled deliveries and the events no delivery refers to; pending ones and their events stay", async () => {
    const { storage, pass, endpoint, allEvents } = await setup();
    await storage.messages.insert(inbound()); // before any endpoint: no delivery
    const e = await endpoint();
    await storage.messages.insert(inbound());
    const [claim] = await storage.webhooks.claimDue("p", 60_000, 10, 10, []);
    await storage.webhooks.recordAttempt(claim!.delivery.id, "p", { state: "succeeded", status: 200, error: null });
    await storage.messages.insert(inbound()); // pending
    const pendingEvent = (await allEvents())[2]!;
    await pass(20);
    expect(await purgeWebhookLog(storage, 10)).toEqual({ deliveries: 1, events: 2 });
    expect((await allEvents()).map((ev) => ev.id)).toEqual([pendingEvent.id]);
    expect((await storage.webhooks.deliveries(e.id, 10)).map((d) => d.eventId)).toEqual([pendingEvent.id]);
    expect(await purgeWebhookLog(storage, 10)).toEqual({ deliveries: 0, events: 0 });
  });
});

describe.each(dialects.filter((d) => d.movableClock))("retention on $name, on a clock the test moves", (dialect) => {
  const setup = setups(dialect);

  test("an old event keeps while a recent entry of the delivery log refers to it", async () => {
    const { storage, pass, endpoint, allEvents } = await setup();
    await storage.messages.insert(inbound());
    await pass(40 * 86_400_000);
    const e = await endpoint();
    expect(await storage.webhooks.replay(e.id, 0)).toBe(1);
    const [claim] = await storage.webhooks.claimDue("p", 60_000, 10, 10, []);
    await storage.webhooks.recordAttempt(claim!.delivery.id, "p", { state: "succeeded", status: 200, error: null });
    expect(await purgeWebhookLog(storage, 30 * 86_400_000)).toEqual({ deliveries: 0, events: 0 });
    await pass(31 * 86_400_000);
    expect(await purgeWebhookLog(storage, 30 * 86_400_000)).toEqual({ deliveries: 1, events: 1 });
    expect(await allEvents()).toEqual([]);
  });
});

describePostgres("webhooks on PostgreSQL, from two processes (two pools)", (db) => {
  async function two(): Promise<[PostgresStorage, PostgresStorage, () => Promise<void>]> {
    const a = await openPostgresStorage(db().url, 10);
    const b = await openPostgresStorage(db().url, 10);
    await a.pool.query("DELETE FROM webhook_deliveries; DELETE FROM events; DELETE FROM webhook_endpoints; DELETE FROM messages");
    return [a, b, async () => void (await Promise.all([a.close(), b.close()]))];
  }

  test("claiming concurrently from 200 due deliveries, no delivery is leased to both", async () => {
    const [a, b, close] = await two();
    try {
      for (const id of ["we_1", "we_2"]) {
        await a.webhooks.createEndpoint({ id, url: `https://example.com/${id}`, events: null, description: null, secret: "whsec_x" });
      }
      await Promise.all(Array.from({ length: 100 }, () => a.messages.insert(inbound())));
      const claimer = async (storage: Storage, owner: string) => {
        const ids: string[] = [];
        for (;;) {
          const claimed = await storage.webhooks.claimDue(owner, 60_000, 7, 5, []);
          if (claimed.length === 0) return ids;
          ids.push(...claimed.map((c) => c.delivery.id));
        }
      };
      const batches = await Promise.all([claimer(a, "a1"), claimer(a, "a2"), claimer(b, "b1"), claimer(b, "b2")]);
      const ids = batches.flat();
      expect(ids).toHaveLength(200);
      expect(new Set(ids).size).toBe(200);
      // Each claimer's deliveries are leased to it.
      const { rows } = await a.pool.query<{ owner: string; n: number }>("SELECT lease_owner AS owner, count(*)::int AS n FROM webhook_deliveries GROUP BY lease_owner ORDER BY 1");
      expect(rows).toEqual(["a1", "a2", "b1", "b2"].map((owner, i) => ({ owner, n: batches[i]!.length })).filter((r) => r.n > 0));
    } finally {
      await close();
    }
  }, 30_000);

  test("events from concurrent writers on two pools have unique timestamps, and a reader following the cursor sees every one", async () => {
    const [a, b, close] = await two();
    try {
      const outs = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).messages.insert(outbound())));
      let writing = true;
      const seen: { id: string; timestamp: number }[] = [];
      const reader = (async () => {
        let since = 0;
        for (;;) {
          const done = !writing;
          const page = await b.webhooks.events(since, 50);
          seen.push(...page.rows.map((ev) => ({ id: ev.id, timestamp: ev.timestamp })));
          if (page.rows.length > 0) since = page.rows.at(-1)!.timestamp;
          if (done && !page.hasMore) return;
        }
      })();
      await Promise.all([
        ...Array.from({ length: 150 }, (_, i) => (i % 2 ? a : b).messages.insert(inbound())),
        ...outs.slice(0, 50).map(({ row }, i) => (i % 2 ? b : a).messages.setStatus(row.id, "sent")),
        ...outs.slice(50).map(({ row }, i) => (i % 2 ? a : b).transaction((tx) => tx.messages.setStatus(row.id, "delivered"))),
      ]);
      writing = false;
      await reader;
      const { rows } = await a.pool.query<{ id: string; timestamp: number }>("SELECT id, timestamp FROM events ORDER BY timestamp");
      expect(rows).toHaveLength(150 + 100);
      expect(new Set(rows.map((r) => r.timestamp)).size).toBe(rows.length);
      expect(seen).toEqual(rows);
    } finally {
      await close();
    }
  }, 30_000);
});
