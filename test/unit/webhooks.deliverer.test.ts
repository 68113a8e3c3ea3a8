import { createSecrets } from "../../src/secrets/seal";
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Storage } from "../../src/db/port";
import { openSqliteStorage } from "../../src/db/sqlite/storage";
import { toEvent } from "../../src/events/types";
import { createLogger } from "../../src/log";
import { outcomeOf, startDeliverer, type Deliverer } from "../../src/webhooks/deliverer";
import { newSecret, startReceiver, until, type Receiver, type Responder } from "../support/webhook-receiver";
import { openPostgresStorage } from "../../src/db/postgres/storage";
import { createTestDatabase, postgresEnabled } from "../support/postgres";
import { dialects, storages } from "./helpers";

// A real database and real timers: bun's 5 s default per test is too short on a busy CI machine.
setDefaultTimeout(30_000);

const SCHEDULE = [0.2, 0.2];
const config = { WEBHOOK_RETRY_SCHEDULE: SCHEDULE, ALLOW_PRIVATE_URLS: true };

function recordingLog() {
  const lines: string[] = [];
  const log = createLogger("debug", {}, (line) => lines.push(line));
  return { log, lines, messages: () => lines.map((l) => JSON.parse(l).msg as string) };
}

const receivers: Receiver[] = [];
const deliverers: Deliverer[] = [];
afterEach(async () => {
  await Promise.all(deliverers.splice(0).map((d) => d.stop(1000)));
  for (const r of receivers.splice(0)) r.stop();
});

function receiver(secret: string, respond?: Responder) {
  const r = startReceiver(secret, respond);
  receivers.push(r);
  return r;
}

function deliverer(storage: Storage, owner = "process-1", log = recordingLog().log) {
  const d = startDeliverer({ storage, config, log, owner, secrets: createSecrets(undefined) });
  deliverers.push(d);
  return d;
}

let seq = 0;
/** An inbound message stored: the database writes its `message.received` event. */
async function inbound(storage: Storage, body = "hello") {
  const id = `msg_in_${++seq}`;
  await storage.messages.insert({ id, phone: "+14155550123", body, direction: "inbound", status: "received", network: "loopback", networkId: null });
  return id;
}

async function endpoint(storage: Storage, url: string, secret: string, id = `we_${++seq}`) {
  return storage.webhooks.createEndpoint({ id, url, events: null, description: null, secret });
}

describe("outcomeOf", () => {
  const failure = { ok: false, status: 500, error: "HTTP 500" };
  test("2xx succeeds; 410 fails at once; others retry by the schedule with up to 10 % jitter, then fail", () => {
    expect(outcomeOf({ ok: true, status: 200, error: null }, 3, [5])).toEqual({ state: "succeeded", status: 200, error: null });
    expect(outcomeOf({ ok: false, status: 410, error: "HTTP 410" }, 0, [5])).toEqual({ state: "failed", status: 410, error: "HTTP 410" });
    expect(outcomeOf(failure, 0, [5, 300], () => 0)).toEqual({ state: "pending", status: 500, error: "HTTP 500", retryInMs: 5000 });
    expect(outcomeOf(failure, 1, [5, 300], () => 0.999999)).toEqual({ state: "pending", status: 500, error: "HTTP 500", retryInMs: 330_000 });
    expect(outcomeOf(failure, 2, [5, 300])).toEqual({ state: "failed", status: 500, error: "HTTP 500" });
    expect(outcomeOf({ ok: false, status: null, error: "timeout after 15 s" }, 0, [])).toEqual({ state: "failed", status: null, error: "timeout after 15 s" });
  });
});

describe.each(dialects)("the deliverer on $name", (dialect) => {
  const fresh = storages(dialect);

  test("events made by real changes arrive signed, as {type, timestamp, data} under the event's id", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const r = receiver(secret);
    const ep = await endpoint(storage, `${r.url}/hook`, secret);
    deliverer(storage);
    await inbound(storage, "hi there");
    await storage.messages.insert({ id: "msg_out", phone: "+14155550123", body: "bye", direction: "outbound", status: "queued", network: "loopback", networkId: null });
    expect(await storage.messages.setStatus("msg_out", "sent")).toBe(true);
    // A refused change (sent → queued) writes no event.
    expect(await storage.messages.setStatus("msg_out", "queued")).toBe(false);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "succeeded")).length === 2, "both deliveries succeeded");

    const { rows } = await storage.webhooks.events(0, 10);
    expect(rows.map((e) => e.type)).toEqual(["message.received", "message.status_updated"]);
    expect(r.received.every((q) => q.verified)).toBe(true);
    const byId = new Map(r.received.map((q) => [q.headers["webhook-id"], JSON.parse(q.body)]));
    expect(byId.size).toBe(2);
    for (const event of rows) {
      const { id, ...payload } = toEvent(event);
      expect(byId.get(id)).toEqual(payload);
    }
    expect(byId.get(rows[1]!.id)).toMatchObject({ data: { id: "msg_out", status: "sent", previous_status: "queued" } });
    expect(await storage.webhooks.deliveries(ep.id, 10)).toEqual(
      expect.arrayContaining([expect.objectContaining({ state: "succeeded", attempts: 1, lastStatus: 204, lastError: null, nextAttemptAt: null })]),
    );
  });

  test("a failed attempt is retried after the schedule's delay with the same webhook-id until it succeeds", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const arrivals: number[] = [];
    const r = receiver(secret, () => {
      arrivals.push(performance.now());
      return new Response(null, { status: arrivals.length < 3 ? 500 : 200 });
    });
    const ep = await endpoint(storage, r.url, secret);
    const { log, lines } = recordingLog();
    deliverer(storage, "process-1", log);
    await inbound(storage);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "succeeded")).length === 1, "the delivery succeeded");

    expect(r.received).toHaveLength(3);
    expect(new Set(r.received.map((q) => q.headers["webhook-id"])).size).toBe(1);
    expect(r.received.every((q) => q.verified)).toBe(true);
    // Each retry waited at least its scheduled delay.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(SCHEDULE[0]! * 1000);
    expect(arrivals[2]! - arrivals[1]!).toBeGreaterThanOrEqual(SCHEDULE[1]! * 1000);
    expect((await storage.webhooks.deliveries(ep.id, 10))[0]).toMatchObject({ attempts: 3, lastStatus: 200, lastError: null });
    // Each failure was logged with what identifies it, never with the secret.
    const failures = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "webhook attempt failed; will retry");
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatchObject({ level: "info", endpoint: ep.id, event: r.received[0]!.headers["webhook-id"], error: "HTTP 500", attempt: 1 });
    expect(lines.join("\n")).not.toContain(secret.slice("whsec_".length));
  });

  test("after the last scheduled retry the delivery is failed, the endpoint marked failing; a later success clears that", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const r = receiver(secret, () => new Response("no", { status: 500 }));
    const ep = await endpoint(storage, r.url, secret);
    const { log, lines } = recordingLog();
    deliverer(storage, "process-1", log);
    await inbound(storage);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "failed")).length === 1, "the delivery failed");

    expect(r.received).toHaveLength(SCHEDULE.length + 1);
    expect((await storage.webhooks.deliveries(ep.id, 10))[0]).toMatchObject({ attempts: 3, lastStatus: 500, lastError: "HTTP 500", nextAttemptAt: null });
    expect((await storage.webhooks.getEndpoint(ep.id))?.failingSince).not.toBeNull();
    expect(lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "webhook delivery failed; not retried")).toEqual([
      expect.objectContaining({ level: "warn", endpoint: ep.id, attempt: 3, status: 500, error: "HTTP 500" }),
    ]);

    r.respond = () => new Response(null, { status: 204 });
    await inbound(storage);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "succeeded")).length === 1, "the next delivery succeeded");
    expect((await storage.webhooks.getEndpoint(ep.id))?.failingSince).toBeNull();
    // The failed delivery was not attempted again.
    expect(r.received).toHaveLength(SCHEDULE.length + 2);
  });

  test("410 Gone: the delivery fails at once and the endpoint is disabled as gone", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const r = receiver(secret, () => new Response(null, { status: 410 }));
    const ep = await endpoint(storage, r.url, secret);
    deliverer(storage);
    await inbound(storage);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "failed")).length === 1, "the delivery failed");
    expect(r.received).toHaveLength(1);
    expect(await storage.webhooks.getEndpoint(ep.id)).toMatchObject({ enabled: false, disabledReason: "gone" });
    expect((await storage.webhooks.deliveries(ep.id, 10))[0]).toMatchObject({ attempts: 1, lastStatus: 410, lastError: "HTTP 410" });
  });

  test("a blocked address is a failed attempt with its reason, and no request", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const r = receiver(secret);
    const ep = await endpoint(storage, r.url, secret);
    deliverers.push(startDeliverer({ storage, config: { ...config, ALLOW_PRIVATE_URLS: false }, log: recordingLog().log, owner: "p", secrets: createSecrets(undefined) }));
    await inbound(storage);
    await until(async () => (await storage.webhooks.deliveries(ep.id, 10, "failed")).length === 1, "the delivery failed");
    expect((await storage.webhooks.deliveries(ep.id, 10))[0]).toMatchObject({ attempts: 3, lastStatus: null, lastError: "blocked: must be an https URL" });
    expect(r.received).toHaveLength(0);
  });

  test("one endpoint that hangs does not delay another, and gets at most 8 attempts at once", async () => {
    const storage = await fresh();
    const secret = newSecret();
    const hanging: (() => void)[] = [];
    const slow = receiver(secret, () => new Promise<Response>((resolve) => hanging.push(() => resolve(new Response(null, { status: 204 })))));
    const fast = receiver(secret);
    const slowEp = await endpoint(storage, slow.url, secret);
    const fastEp = await endpoint(storage, fast.url, secret);
    deliverer(storage);
    for (let i = 0; i < 30; i++) await inbound(storage, `m${i}`);

    await until(() => fast.countsById().size === 30, "every event at the fast endpoint");
    // Everything reached the fast endpoint while the slow one still holds its first attempts.
    expect(slow.received.length).toBeGreaterThan(0);
    expect(slow.received.length).toBeLessThanOrEqual(8);
    expect(slow.mostOpen).toBeLessThanOrEqual(8);

    const release = setInterval(() => hanging.splice(0).forEach((answer) => answer()), 5);
    try {
      await until(async () => (await storage.webhooks.deliveries(slowEp.id, 100, "succeeded")).length === 30, "every slow delivery succeeded");
    } finally {
      clearInterval(release);
    }
    expect(slow.countsById().size).toBe(30);
    expect(slow.mostOpen).toBeLessThanOrEqual(8);
    expect([...slow.received, ...fast.received].every((q) => q.verified)).toBe(true);
    expect((await storage.webhooks.deliveries(fastEp.id, 100, "succeeded")).length).toBe(30);
  });

  test("two deliverers (two owners) on one database: every event delivered exactly once to every endpoint", async () => {
    const storage = await fresh();
    const secret = newSecret();
    // A few milliseconds per answer, so the two deliverers' claims overlap.
    const rs = [0, 1, 2].map(() => receiver(secret, async () => (await Bun.sleep(3), new Response(null, { status: 204 }))));
    for (const r of rs) await endpoint(storage, r.url, secret);
    deliverer(storage, "process-1");
    deliverer(storage, "process-2");
    const events = 60;
    for (let i = 0; i < events; i++) await inbound(storage, `m${i}`);

    await until(() => rs.every((r) => r.countsById().size === events), "every event at every endpoint", 30_000);
    // Let any duplicate attempt land before counting.
    await Bun.sleep(300);
    for (const r of rs) {
      expect([...r.countsById().values()].every((n) => n === 1)).toBe(true);
      expect(r.received).toHaveLength(events);
      expect(r.received.every((q) => q.verified)).toBe(true);
    }
  });

  test("stop() waits for the attempt in flight (its outcome recorded) and claims nothing afterwards", async () => {
    const storage = await fresh();
    const secret = newSecret();
    let answer!: () => void;
    const r = receiver(secret, () => new Promise<Response>((resolve) => (answer = () => resolve(new Response(null, { status: 204 })))));
    const ep = await endpoint(storage, r.url, secret);
    const d = startDeliverer({ storage, config, log: recordingLog().log, owner: "p", secrets: createSecrets(undefined) });
    await inbound(storage);
    await until(() => r.received.length === 1, "the attempt started");
    let stopped = false;
    const stopping = d.stop(10_000).then(() => (stopped = true));
    await Bun.sleep(50);
    expect(stopped).toBe(false);
    answer();
    await stopping;
    expect((await storage.webhooks.deliveries(ep.id, 10))[0]).toMatchObject({ state: "succeeded", attempts: 1 });
    await inbound(storage);
    await Bun.sleep(700);
    expect(r.received).toHaveLength(1);
  });
});

/** Two storages on one database, as two processes would have: SQLite on a file, PostgreSQL with two pools. */
const pairs: { name: string; open(): Promise<{ storages: [Storage, Storage]; done(): Promise<void> }> }[] = [
  {
    name: "sqlite",
    async open() {
      const dir = mkdtempSync(join(tmpdir(), "tw-deliverers-"));
      const storages: [Storage, Storage] = [openSqliteStorage(join(dir, "textwire.db")), openSqliteStorage(join(dir, "textwire.db"))];
      return { storages, done: async () => (await Promise.all(storages.map((s) => s.close())), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  ...(postgresEnabled()
    ? [
        {
          name: "postgres",
          async open() {
            const database = await createTestDatabase();
            const storages: [Storage, Storage] = [await openPostgresStorage(database.url, 10), await openPostgresStorage(database.url, 10)];
            return { storages, done: async () => (await Promise.all(storages.map((s) => s.close())), await database.drop()) };
          },
        },
      ]
    : []),
];

describe.each(pairs)("two processes' deliverers on one $name database", (pair) => {
  test("every event reaches every endpoint exactly once", async () => {
    const { storages: [a, b], done } = await pair.open();
    try {
      const secret = newSecret();
      const rs = [0, 1, 2].map(() => receiver(secret, async () => (await Bun.sleep(3), new Response(null, { status: 204 }))));
      for (const r of rs) await endpoint(a, r.url, secret);
      deliverer(a, "process-1");
      deliverer(b, "process-2");
      const events = 60;
      for (let i = 0; i < events; i++) await inbound(i % 2 ? a : b, `m${i}`);
      await until(() => rs.every((r) => r.countsById().size === events), "every event at every endpoint", 30_000);
      await Bun.sleep(300);
      for (const r of rs) {
        expect(r.received).toHaveLength(events);
        expect(r.received.every((q) => q.verified)).toBe(true);
      }
    } finally {
      await Promise.all(deliverers.splice(0).map((d) => d.stop(1000)));
      await done();
    }
  }, 40_000);
});

describe("the deliverer when the database is busy", () => {
  test("a failing claim is logged and tried again, and delivery resumes once the database answers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-deliverer-"));
    // Busy after 20 ms rather than after the usual 5 s wait.
    const storage = openSqliteStorage(join(dir, "textwire.db"), { busyLimitMs: 20 });
    const other = new Database(join(dir, "textwire.db"));
    try {
      const secret = newSecret();
      const r = receiver(secret);
      await endpoint(storage, r.url, secret);
      const { log, messages } = recordingLog();
      // A delivery is due, so the claim needs the write lock (an idle deliverer only reads).
      await inbound(storage);
      other.run("BEGIN EXCLUSIVE");
      deliverers.push(startDeliverer({ storage, config, log, owner: "p", secrets: createSecrets(undefined) }));
      await until(() => messages().filter((m) => m === "claiming webhook deliveries failed; will retry").length >= 2, "two failed claims logged");
      expect(r.received.length).toBe(0);
      other.run("COMMIT");
      await until(() => r.received.length === 1, "the event delivered");
      expect(r.received[0]!.verified).toBe(true);
    } finally {
      await Promise.all(deliverers.splice(0).map((d) => d.stop(1000)));
      other.close();
      await storage.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
