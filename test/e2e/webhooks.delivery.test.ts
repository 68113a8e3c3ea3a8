/**
 * Outbound webhooks end to end (docs/webhooks.md): the real server (`bun run start`) pushes
 * events to receivers on 127.0.0.1 that verify every delivery with the `standardwebhooks`
 * library (test/support/webhook-receiver.ts), on the run's database (SQLite, or PostgreSQL in
 * the PostgreSQL pass). Endpoints are made over REST; ALLOW_PRIVATE_URLS=true lets them be
 * http on 127.0.0.1.
 */
import { EVENT_TYPES, isAdminEvent } from "../../src/vocabulary/events";
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { call, inbound, newPhone, send } from "./api";
import { onPostgres, spawnServer, startServer, testDatabase, waitFor, type Server, type Spawned, type TestDatabase } from "./harness";
import { downUrl, startReceiver, verifies, type Receiver, type ReceivedRequest } from "../support/webhook-receiver";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(90_000);

const servers: Server[] = [];
const spawned: Spawned[] = [];
const receivers: Receiver[] = [];
const dbs: TestDatabase[] = [];

afterAll(async () => {
  for (const s of [...servers, ...spawned]) s.kill();
  for (const r of receivers) await r.stop();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((d) => d.cleanup()));
}, 120_000);

const FAST_RETRIES = "0.3,0.3";

async function start(env: Record<string, string> = {}, opts: { db?: TestDatabase; mode?: "api" | "worker"; apiKey?: string } = {}): Promise<Server> {
  const db = opts.db ?? (await testDatabase());
  if (!opts.db) dbs.push(db);
  const server = await startServer({
    db,
    env: { ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE: FAST_RETRIES, LOG_LEVEL: "warn", ...env },
    ...(opts.mode ? { mode: opts.mode } : {}),
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
  });
  servers.push(server);
  return server;
}

function receiver(): Receiver {
  const r = startReceiver();
  receivers.push(r);
  return r;
}

/** Answers every request with this status. */
const status = (code: number) => () => new Response(code === 204 ? null : `answer ${code}`, { status: code });
/** The requests that carried this webhook-id, in order. */
const attempts = (r: Receiver, id: string) => r.received.filter((x) => x.headers["webhook-id"] === id);
/** webhook-ids of requests that verified with the receiver's secret. */
const verifiedIds = (r: Receiver) => new Set(r.received.filter((x) => x.verified).map((x) => x.headers["webhook-id"]!));
const bodyOf = (x: ReceivedRequest) => JSON.parse(x.body) as { type: string; timestamp: string; data: Record<string, unknown> };

interface Endpoint {
  id: string;
  url: string;
  events: string[] | null;
  enabled: boolean;
  disabled_reason: string | null;
  secret?: string;
}

interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  state: "pending" | "succeeded" | "failed";
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
}

interface EventRecord {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}

/** Creates an endpoint for the receiver (its secret goes to the receiver). */
/** Message and workflow events by default: the admin actions (each endpoint's own creation among them) are counted elsewhere (webhook-endpoints.test.ts). */
const NOT_ADMIN = EVENT_TYPES.filter((type) => !isAdminEvent(type));

async function subscribe(server: Server, r: Receiver | string, events: readonly string[] = NOT_ADMIN): Promise<Endpoint> {
  const url = typeof r === "string" ? r : r.url;
  const reply = await call<{ endpoint: Endpoint }>(server, "POST", "/api/webhook-endpoints", { body: { url, events } });
  expect(reply.status).toBe(201);
  const endpoint = reply.body.endpoint;
  expect(endpoint.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32,}$/);
  if (typeof r !== "string") r.secret = endpoint.secret!;
  return endpoint;
}

async function deliveries(server: Server, endpointId: string, query = ""): Promise<Delivery[]> {
  const reply = await call<{ deliveries: Delivery[] }>(server, "GET", `/api/webhook-endpoints/${endpointId}/deliveries${query}`);
  expect(reply.status).toBe(200);
  return reply.body.deliveries;
}

async function endpoint(server: Server, id: string): Promise<Endpoint> {
  const reply = await call<{ endpoint: Endpoint }>(server, "GET", `/api/webhook-endpoints/${id}`);
  expect(reply.status).toBe(200);
  return reply.body.endpoint;
}

/** Every event but admin actions (an endpoint's own creation is one: docs/webhooks.md), which the tests here are not about. */
async function allEvents(server: Server, type?: string): Promise<EventRecord[]> {
  return (await everyEvent(server, type)).filter((e) => !isAdminEvent(e.type));
}

async function everyEvent(server: Server, type?: string): Promise<EventRecord[]> {
  const out: EventRecord[] = [];
  let since: string | undefined;
  for (let page = 0; page < 100; page++) {
    const query = new URLSearchParams({ limit: "100", ...(since ? { since } : {}), ...(type ? { type } : {}) });
    const reply = await call<{ events: EventRecord[]; has_more: boolean }>(server, "GET", `/api/events?${query}`);
    expect(reply.status).toBe(200);
    out.push(...reply.body.events);
    if (!reply.body.has_more) return out;
    since = reply.body.events.at(-1)!.timestamp;
  }
  throw new Error("more than 100 pages of events");
}

/** waitFor with the probe first. */
const until = <T>(what: string, probe: () => T | undefined | null | false | Promise<T | undefined | null | false>, ms: number) => waitFor(what, ms, probe);

/** Waits until the receiver has verified deliveries for every id (bounded). */
async function receivedAll(r: Receiver, ids: string[], ms = 30_000): Promise<void> {
  await waitFor(`${ids.length} verified deliveries`, ms, () => {
    const got = verifiedIds(r);
    return ids.every((id) => got.has(id)) ? true : undefined;
  }, () => `got ${verifiedIds(r).size} of ${ids.length}`);
}

describe("each event type is pushed, signed, as the events list shows it", () => {
  test("message.received, message.status_updated and workflow.run_failed", async () => {
    const db = await testDatabase();
    dbs.push(db);
    const wfDir = join(db.dir, "workflows");
    mkdirSync(wfDir);
    writeFileSync(
      join(wfDir, "broken.ts"),
      `export default { name: "broken", schedule: "* * * * * *", async run() { throw new Error("the model is down"); } };\n`,
    );
    const r = receiver();
    const server = await start({ WORKFLOWS_DIR: wfDir }, { db });
    const ep = await subscribe(server, r);
    const phone = newPhone();
    const got = await inbound(server, phone, "hello there");
    const sent = await send(server, phone, "hi back");

    // The workflow may fail once before the endpoint exists: only the events queued for the
    // endpoint are expected at it.
    const events = await until("the three event types queued for the endpoint", async () => {
      const queued = new Set((await deliveries(server, ep.id, "?limit=100")).map((d) => d.event_id));
      const list = (await allEvents(server)).filter((e) => queued.has(e.id));
      const types = new Set(list.map((e) => e.type));
      return types.has("message.received") && types.has("message.status_updated") && types.has("workflow.run_failed") ? list : undefined;
    }, 20_000);
    await receivedAll(r, events.map((e) => e.id));

    const received = events.find((e) => e.type === "message.received" && e.data.id === got.message_id)!;
    expect(received.data).toEqual({ id: got.message_id, phone, message: "hello there", direction: "inbound", timestamp: received.data.timestamp, status: "received", reply_to: null, media: [], reactions: [], read_at: null, edited_at: null, unsent_at: null, chat_id: `dm_${phone.slice(1)}`, line_id: "ln_default" });
    const statusEvent = events.find((e) => e.type === "message.status_updated" && e.data.id === sent.message_id)!;
    expect(statusEvent.data.status).toBe("delivered");
    expect(statusEvent.data.previous_status).toBe("queued");
    expect(statusEvent.data.message).toBe("hi back");
    const failed = events.find((e) => e.type === "workflow.run_failed")!;
    expect(failed.data.workflow).toBe("broken");
    expect(failed.data.status).toBe("error");
    expect(String(failed.data.error)).toContain("the model is down");

    for (const event of [received, statusEvent, failed]) {
      const [first] = attempts(r, event.id);
      expect(first).toBeDefined();
      // The body is the event without its id (the id is the webhook-id header).
      expect(bodyOf(first!)).toEqual({ type: event.type, timestamp: event.timestamp, data: event.data });
      expect(first!.verified).toBe(true);
      expect(first!.headers["content-type"]).toBe("application/json");
      expect(first!.headers["user-agent"]).toContain("Textwire");
      expect(Math.abs(Number(first!.headers["webhook-timestamp"]) - first!.at / 1000)).toBeLessThan(30);
    }
    // The receiver logs a request before it answers; the server records the answer after.
    const log = await until("the received event's delivery recorded", async () => {
      const all = await deliveries(server, ep.id, "?limit=100");
      return all.find((d) => d.event_id === received.id)?.state === "succeeded" ? all : undefined;
    }, 5_000);
    expect(log.filter((d) => d.event_id === received.id).map((d) => [d.state, d.attempts, d.last_status])).toEqual([["succeeded", 1, 204]]);
  });

  test("an endpoint gets only the types it subscribed to", async () => {
    const all = receiver();
    const onlyReceived = receiver();
    const onlyStatus = receiver();
    const server = await start();
    await subscribe(server, all);
    await subscribe(server, onlyReceived, ["message.received"]);
    await subscribe(server, onlyStatus, ["message.status_updated"]);
    const phone = newPhone();
    await inbound(server, phone, "one");
    await send(server, phone, "two");
    const events = await until("two events", async () => {
      const list = await allEvents(server);
      return list.length >= 2 ? list : undefined;
    }, 10_000);
    await receivedAll(all, events.map((e) => e.id));
    await receivedAll(onlyReceived, events.filter((e) => e.type === "message.received").map((e) => e.id));
    await receivedAll(onlyStatus, events.filter((e) => e.type === "message.status_updated").map((e) => e.id));
    // Give any wrong delivery the time the right ones took, then check none came.
    await Bun.sleep(500);
    expect(new Set(onlyReceived.received.map((x) => bodyOf(x).type))).toEqual(new Set(["message.received"]));
    expect(new Set(onlyStatus.received.map((x) => bodyOf(x).type))).toEqual(new Set(["message.status_updated"]));
  });
});

describe("failures and retries", () => {
  test("a failing receiver is retried on the schedule with the same webhook-id until it answers 2xx", async () => {
    const r = receiver();
    r.respond = (req) => new Response(null, { status: attempts(r, req.headers["webhook-id"]!).length < 3 ? 500 : 200 });
    const server = await start({ WEBHOOK_RETRY_SCHEDULE: "0.3,0.3,0.3" });
    const ep = await subscribe(server, r);
    const got = await inbound(server, newPhone(), "retry me");
    const [event] = await allEvents(server);
    expect(event!.data.id).toBe(got.message_id);
    await until("three attempts", () => (attempts(r, event!.id).length >= 3 ? true : undefined), 15_000);
    const tries = attempts(r, event!.id);
    expect(tries.map((a) => a.verified)).toEqual([true, true, true]);
    // Each attempt is signed afresh; the body is the same.
    expect(new Set(tries.map((a) => a.body)).size).toBe(1);
    // At least the scheduled delay (jitter only adds) between attempts.
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(250);
    const [d] = await until("the delivery succeeded", async () => {
      const log = await deliveries(server, ep.id);
      return log[0]?.state === "succeeded" ? log : undefined;
    }, 5_000);
    expect([d!.attempts, d!.last_status, d!.next_attempt_at]).toEqual([3, 200, null]);
    expect((await endpoint(server, ep.id)).enabled).toBe(true);
  });

  test("410 Gone disables the endpoint at once; later events are not queued for it", async () => {
    const r = receiver();
    r.respond = status(410);
    const server = await start();
    const ep = await subscribe(server, r);
    await inbound(server, newPhone(), "are you there?");
    await until("the endpoint disabled", async () => ((await endpoint(server, ep.id)).enabled ? undefined : true), 10_000);
    const after = await endpoint(server, ep.id);
    expect([after.enabled, after.disabled_reason]).toEqual([false, "gone"]);
    // The endpoint is disabled before the attempt is recorded: wait for the record too.
    const [d] = await until("the delivery recorded as failed", async () => {
      const log = await deliveries(server, ep.id);
      return log[0]?.state === "failed" ? log : undefined;
    }, 5_000);
    expect([d!.state, d!.attempts, d!.last_status]).toEqual(["failed", 1, 410]);
    await inbound(server, newPhone(), "anyone?");
    await Bun.sleep(800);
    expect(r.received.length).toBe(1);
    expect((await deliveries(server, ep.id)).length).toBe(1);
  });

  test("retries exhausted: the delivery fails; a replay sends it again, same webhook-id", async () => {
    const r = receiver();
    r.respond = status(503);
    const server = await start({ WEBHOOK_RETRY_SCHEDULE: "0.2,0.2" });
    const ep = await subscribe(server, r);
    const before = new Date(Date.now() - 60_000).toISOString();
    await inbound(server, newPhone(), "lost?");
    const [event] = await allEvents(server);
    const [failed] = await until("the delivery failed", async () => {
      const log = await deliveries(server, ep.id, "?status=failed");
      return log.length === 1 ? log : undefined;
    }, 15_000);
    expect([failed!.attempts, failed!.last_status, failed!.next_attempt_at]).toEqual([3, 503, null]);
    expect(attempts(r, event!.id).length).toBe(3);
    // Failing is not yet five days of failure: the endpoint stays enabled.
    expect((await endpoint(server, ep.id)).enabled).toBe(true);

    r.respond = status(200);
    const replay = await call<{ queued: number }>(server, "POST", `/api/webhook-endpoints/${ep.id}/replay`, { body: { since: before } });
    expect(replay.status).toBe(200);
    expect(replay.body.queued).toBe(1);
    await until("the replayed delivery", () => (attempts(r, event!.id).length === 4 ? true : undefined), 10_000);
    expect(attempts(r, event!.id)[3]!.verified).toBe(true);
    const [d] = await until("succeeded", async () => {
      const log = await deliveries(server, ep.id);
      return log[0]?.state === "succeeded" ? log : undefined;
    }, 5_000);
    expect([d!.attempts, d!.last_status]).toEqual([1, 200]);

    // One delivery retried by hand, now.
    const retry = await call<{ delivery: Delivery }>(server, "POST", `/api/webhook-endpoints/${ep.id}/deliveries/${d!.id}/retry`);
    expect(retry.status).toBe(200);
    await until("the manual retry", () => (attempts(r, event!.id).length === 5 ? true : undefined), 10_000);
    expect(attempts(r, event!.id)[4]!.verified).toBe(true);
  });

  test("a receiver that never answers times out after 15 s and is retried; another endpoint is not held up", async () => {
    const hanging = receiver();
    hanging.respond = () => new Promise<Response>(() => {});
    const healthy = receiver();
    const server = await start({ WEBHOOK_RETRY_SCHEDULE: "60" });
    const slow = await subscribe(server, hanging);
    await subscribe(server, healthy);
    const started = Date.now();
    await inbound(server, newPhone(), "first");
    const [first] = await allEvents(server);
    await receivedAll(healthy, [first!.id], 10_000);
    // More events while the hanging attempt is in flight all reach the healthy endpoint.
    const phone = newPhone();
    for (let i = 0; i < 5; i++) await inbound(server, phone, `more ${i}`);
    const events = await allEvents(server);
    await receivedAll(healthy, events.map((e) => e.id), 10_000);
    expect(Date.now() - started).toBeLessThan(14_000);
    const [d] = await until("the hanging attempt timed out", async () => {
      const log = (await deliveries(server, slow.id)).filter((x) => x.event_id === first!.id);
      return log[0] && log[0].attempts === 1 ? log : undefined;
    }, 25_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15_000);
    expect(d!.state).toBe("pending");
    expect(d!.last_status).toBeNull();
    expect(String(d!.last_error)).toMatch(/timeout/i);
    expect(d!.next_attempt_at).not.toBeNull();
  });
});

test("secret rotation: for 24 h deliveries carry both signatures; either secret verifies", async () => {
  const r = receiver();
  const server = await start();
  const ep = await subscribe(server, r);
  await inbound(server, newPhone(), "before rotation");
  const [first] = await allEvents(server);
  await receivedAll(r, [first!.id]);
  expect(attempts(r, first!.id)[0]!.headers["webhook-signature"]!.split(" ").length).toBe(1);
  const oldSecret = r.secret!;

  const rotated = await call<{ endpoint: Endpoint }>(server, "POST", `/api/webhook-endpoints/${ep.id}/rotate-secret`);
  expect(rotated.status).toBe(200);
  const secret = rotated.body.endpoint.secret!;
  expect(secret).toMatch(/^whsec_/);
  expect(secret).not.toBe(oldSecret);
  // The secret is not shown again.
  expect((await endpoint(server, ep.id)).secret).toBeUndefined();

  await inbound(server, newPhone(), "after rotation");
  const events = await allEvents(server);
  const second = events.at(-1)!;
  await receivedAll(r, [second.id]);
  const attempt = attempts(r, second.id)[0]!;
  expect(attempt.headers["webhook-signature"]!.split(" ").length).toBe(2);
  // A receiver still holding the old secret verifies, and so does one with the new secret.
  expect([verifies(oldSecret, attempt), verifies(secret, attempt)]).toEqual([true, true]);
});

test("1,000 events to 3 endpoints, one down: the two others get every event, the down one retries", async () => {
  const a = receiver();
  const b = receiver();
  const server = await start({ WEBHOOK_RETRY_SCHEDULE: "1,1,1,1,1,1,1,1,1,1" });
  await subscribe(server, a);
  await subscribe(server, b);
  const down = await subscribe(server, await downUrl());
  const phones = Array.from({ length: 10 }, () => newPhone());
  // 1,000 inbound messages, 10 at a time (bounded).
  for (let batch = 0; batch < 100; batch++) {
    await Promise.all(phones.map((phone, i) => inbound(server, phone, `m ${batch}-${i}`)));
  }
  const events = await allEvents(server, "message.received");
  expect(events.length).toBe(1000);
  const ids = events.map((e) => e.id);
  await receivedAll(a, ids, 60_000);
  await receivedAll(b, ids, 60_000);
  for (const r of [a, b]) {
    expect(r.received.every((x) => x.verified)).toBe(true);
    expect(verifiedIds(r).size).toBe(1000);
  }
  const log = await until("the down endpoint's deliveries were tried", async () => {
    const pending = await deliveries(server, down.id, "?status=pending&limit=100");
    return pending.length === 100 && pending.every((d) => d.attempts >= 1) ? pending : undefined;
  }, 60_000);
  expect(log.every((d) => d.last_status === null && d.last_error !== null && d.next_attempt_at !== null)).toBe(true);
});

test("SIGKILL with undelivered events: every event arrives after the restart", async () => {
  const r = receiver();
  r.respond = status(503);
  const db = await testDatabase();
  dbs.push(db);
  const apiKey = `tw_test_${crypto.randomUUID().replaceAll("-", "")}`;
  let server = await start({ WEBHOOK_RETRY_SCHEDULE: "0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5" }, { db, apiKey });
  await subscribe(server, r);
  const phone = newPhone();
  for (let i = 0; i < 50; i++) await inbound(server, phone, `undelivered ${i}`);
  await until("attempts under way", () => (r.received.length >= 20 ? true : undefined), 10_000);
  server.kill();
  await server.proc.exited;
  expect(server.proc.signalCode).toBe("SIGKILL");

  r.respond = status(200);
  server = await start({ WEBHOOK_RETRY_SCHEDULE: "0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5,0.5" }, { db, apiKey });
  const events = await allEvents(server);
  expect(events.length).toBe(50);
  // A delivery leased at the kill waits for its lease (30 s) to run out.
  await receivedAll(r, events.map((e) => e.id), 60_000);
});

const testOnPostgres: typeof test = onPostgres ? test : (((..._args: unknown[]) => {}) as unknown as typeof test);

testOnPostgres("on PostgreSQL, two worker processes share the queue: every event delivered, no attempt made twice", async () => {
  const r = receiver();
  const db = await testDatabase();
  dbs.push(db);
  const apiKey = `tw_test_${crypto.randomUUID().replaceAll("-", "")}`;
  const api = await start({}, { db, apiKey, mode: "api" });
  await subscribe(api, r);
  const env = { ALLOW_PRIVATE_URLS: "true", WEBHOOK_RETRY_SCHEDULE: FAST_RETRIES, LOG_LEVEL: "info" };
  const workers: Spawned[] = [await spawnServer({ db, apiKey, mode: "worker", env }), await spawnServer({ db, apiKey, mode: "worker", env })];
  spawned.push(...workers);
  for (const w of workers) await waitFor("a worker delivering", 15_000, () => w.stdout.includes("delivering outbound webhooks"), () => w.stdout + w.stderr);
  // Each process has at most 8 attempts in flight to one endpoint: more at once means both deliver.
  r.respond = async () => {
    await Bun.sleep(30);
    return new Response(null, { status: 204 });
  };
  const phones = Array.from({ length: 10 }, () => newPhone());
  for (let batch = 0; batch < 30; batch++) await Promise.all(phones.map((phone, i) => inbound(api, phone, `w ${batch}-${i}`)));
  const events = await allEvents(api);
  expect(events.length).toBe(300);
  await receivedAll(r, events.map((e) => e.id), 60_000);
  await Bun.sleep(1000);
  const twice = events.filter((e) => attempts(r, e.id).length !== 1).map((e) => e.id);
  expect(twice).toEqual([]);
  expect(r.received.length).toBe(300);
  expect(r.mostOpen).toBeGreaterThan(8);
  for (const w of workers) expect(w.proc.exitCode).toBeNull();
});
