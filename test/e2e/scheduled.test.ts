// Scheduled sends end to end (docs/api.md "Scheduled sends"), with the real server on the
// Twilio stand-in, so every send is counted where it arrives: at the network. `send_at`
// validation, the send on time (within the 2 s the API promises, with slack for a loaded
// machine) and once, cancel, the waiting list, Idempotency-Key, the status events, a crash
// with a message due, and several processes on one database each sending a message once.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "../../src/client";
import { call, expectBadField, expectError, newPhone, trpcFailure, type MessageRecord } from "./api";
import { gone, newApiKey, spawnServer, startServer, testDatabase, waitFor, type Server, type Spawned, type TestDatabase } from "./harness";
import { startFakeTwilio, twilioEnv, type FakeTwilio } from "../support/fake-twilio";

setDefaultTimeout(90_000);

/** The API's promise: a scheduled message goes out within 2 s of its time while a worker runs. */
const ON_TIME_MS = 2_000;
/** Added to waits bounded by that promise, for a loaded test machine (the waits end as soon as the send arrives). */
const SLACK_MS = 2_000;

let fake: FakeTwilio;
let server: Server;
/** When the stand-in received each text (ms): a text is sent at most once per test. */
const receivedAt = new Map<string, number[]>();
const extra: { kill(): void }[] = [];
const dbs: TestDatabase[] = [];

beforeAll(async () => {
  fake = startFakeTwilio();
  fake.reply((req) => {
    const text = req.body.Body ?? "";
    receivedAt.set(text, [...(receivedAt.get(text) ?? []), Date.now()]);
    return { kind: "created" };
  });
  server = await startServer({ env: twilioEnv(fake) });
}, 60_000);
afterAll(async () => {
  server?.kill();
  for (const p of extra) p.kill();
  await fake?.stop();
  // Dropped together: on PostgreSQL each drop waits for a checkpoint.
  await Promise.all(dbs.map((db) => db.cleanup()));
}, 120_000);

const sends = (text: string) => receivedAt.get(text)?.length ?? 0;
const iso = (ms: number) => new Date(ms).toISOString();
/** The wire form of a time: microseconds. */
const isoUs = (ms: number) => iso(ms).replace("Z", "000Z");

interface Scheduled {
  success: boolean;
  message_id: string;
  timestamp: string;
  status: string;
}

async function schedule(on: Server, phone: string, message: string, sendAt: string | number, headers: Record<string, string> = {}) {
  return call<Scheduled>(on, "POST", "/api/send", { body: { phone, message, send_at: sendAt }, headers });
}

async function scheduleOk(on: Server, phone: string, message: string, sendAtMs: number) {
  const reply = await schedule(on, phone, message, iso(sendAtMs));
  if (reply.status !== 200) throw new Error(`scheduling failed: ${reply.status} ${reply.text}`);
  return reply.body;
}

async function record(on: Server, phone: string, id: string): Promise<MessageRecord & { send_at?: string }> {
  const reply = await call<{ messages: (MessageRecord & { send_at?: string })[] }>(on, "GET", `/api/messages/${encodeURIComponent(phone)}?limit=100`);
  expect(reply.status).toBe(200);
  const found = reply.body.messages.find((m) => m.id === id);
  if (!found) throw new Error(`message ${id} is not in ${phone}'s history`);
  return found;
}

const cancel = (on: Server, id: string) => call<{ success: boolean; message: MessageRecord }>(on, "POST", `/api/messages/${encodeURIComponent(id)}/cancel`);

describe("send_at", () => {
  test("a time not after now, more than a year ahead, or not a date-time is 400 naming send_at; nothing is stored", async () => {
    const phone = newPhone();
    for (const bad of [iso(Date.now() - 1_000), "2020-01-01T00:00:00Z", iso(Date.now() + 367 * 86_400_000), "tomorrow", "2026-02-30T10:00:00Z", 1_900_000_000, ""]) {
      const reply = await schedule(server, phone, "never", bad as string);
      expectBadField(reply, "send_at");
      expect((reply.body as unknown as { error: { message: string } }).error.message).toStartWith("send_at: ");
    }
    const history = await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`);
    expect(history.body.total).toBe(0);
  });

  test("any zone is read; the record shows send_at in UTC, and a time without a zone is UTC", async () => {
    const phone = newPhone();
    const at = Math.floor(Date.now() / 1000) * 1000 + 3_600_000;
    const d = new Date(at + 2 * 3_600_000);
    const pad = (n: number) => String(n).padStart(2, "0");
    const plusTwo = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}+02:00`;
    const zoned = await schedule(server, phone, "zoned", plusTwo);
    const bare = await schedule(server, phone, "bare", iso(at).replace("Z", ""));
    for (const reply of [zoned, bare]) {
      expect(reply.status).toBe(200);
      expect(await record(server, phone, reply.body.message_id)).toMatchObject({ status: "scheduled", send_at: isoUs(at) });
      expect((await cancel(server, reply.body.message_id)).status).toBe(200);
    }
  });
});

describe("a scheduled message", () => {
  test("is answered scheduled, then sent once within 2 s of its time, and its status events say scheduled → queued → sent", async () => {
    const phone = newPhone();
    const text = `on time ${crypto.randomUUID()}`;
    const at = Date.now() + 2_000;
    const reply = await schedule(server, phone, text, iso(at));
    expect(reply.status).toBe(200);
    expect(Object.keys(reply.body).toSorted()).toEqual(["message_id", "status", "success", "timestamp"]);
    expect(reply.body).toMatchObject({ success: true, status: "scheduled" });
    const id = reply.body.message_id;
    expect(await record(server, phone, id)).toMatchObject({ status: "scheduled", send_at: isoUs(at), direction: "outbound", message: text });

    await waitFor("the send at the network", at + ON_TIME_MS + SLACK_MS - Date.now(), () => sends(text) > 0, () => server.stdout);
    // Never before its time.
    expect(receivedAt.get(text)![0]!).toBeGreaterThanOrEqual(at);
    expect(fake.sends.find((s) => s.body.Body === text)?.body.To).toBe(phone);
    await waitFor("status sent", 5_000, async () => (await record(server, phone, id)).status === "sent");
    expect((await record(server, phone, id)).send_at).toBe(isoUs(at));

    const events = await call<{ events: { data: { id: string; status: string; previous_status: string } }[] }>(server, "GET", "/api/events?type=message.status_updated&limit=100");
    const mine = events.body.events.filter((e) => e.data.id === id).map((e) => `${e.data.previous_status}→${e.data.status}`);
    expect(mine).toEqual(["scheduled→queued", "queued→sent"]);
    await Bun.sleep(1_500);
    expect(sends(text)).toBe(1);
  });

  test("canceled before its time: canceled, never sent; cancel again, or after the send, is 409; an unknown id 404", async () => {
    const phone = newPhone();
    const text = `canceled ${crypto.randomUUID()}`;
    // Far enough ahead that the cancel always comes first, even on a loaded machine.
    const at = Date.now() + 4_000;
    const { message_id: id } = await scheduleOk(server, phone, text, at);
    const canceled = await cancel(server, id);
    expect(canceled.status).toBe(200);
    expect(canceled.body.success).toBe(true);
    expect(canceled.body.message).toMatchObject({ id, status: "canceled", phone, message: text });

    const again = expectError(await cancel(server, id), 409, "CONFLICT");
    expect(again.error.message).toBe(`message ${id} is canceled; only a scheduled message can be canceled`);
    await Bun.sleep(at + ON_TIME_MS + 500 - Date.now());
    expect(sends(text)).toBe(0);
    expect((await record(server, phone, id)).status).toBe("canceled");
    const events = await call<{ events: { data: { id: string; status: string; previous_status: string } }[] }>(server, "GET", "/api/events?type=message.status_updated&limit=100");
    expect(events.body.events.filter((e) => e.data.id === id).map((e) => `${e.data.previous_status}→${e.data.status}`)).toEqual(["scheduled→canceled"]);

    const sentText = `sent first ${crypto.randomUUID()}`;
    const sent = await scheduleOk(server, phone, sentText, Date.now() + 1_000);
    await waitFor("the send", ON_TIME_MS + SLACK_MS + 1_000, () => sends(sentText) > 0);
    await waitFor("status sent", 5_000, async () => (await record(server, phone, sent.message_id)).status === "sent");
    const late = expectError(await cancel(server, sent.message_id), 409, "CONFLICT");
    expect(late.error.message).toBe(`message ${sent.message_id} is sent; only a scheduled message can be canceled`);

    expectError(await cancel(server, "01a20973-b8dc-74d8-be4d-b76a701b138f"), 404, "NOT_FOUND");
  });

  test("GET /api/messages/scheduled lists what waits, soonest first, a page at a time", async () => {
    const phone = newPhone();
    const base = Date.now() + 3_600_000;
    const later = await scheduleOk(server, phone, "later", base + 20 * 60_000);
    const soonest = await scheduleOk(server, phone, "soonest", base);
    const middle = await scheduleOk(server, phone, "middle", base + 10 * 60_000);
    const gone = await scheduleOk(server, phone, "gone", base + 5 * 60_000);
    await cancel(server, gone.message_id);
    const mine = new Set([later, soonest, middle].map((m) => m.message_id));

    const list = await call<{ success: boolean; messages: (MessageRecord & { send_at: string })[]; total: number; limit: number; offset: number }>(server, "GET", "/api/messages/scheduled?limit=100");
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ success: true, limit: 100, offset: 0 });
    const listed = list.body.messages.filter((m) => mine.has(m.id));
    expect(listed.map((m) => m.message)).toEqual(["soonest", "middle", "later"]);
    const times = list.body.messages.map((m) => m.send_at);
    expect(times).toEqual(times.toSorted());
    expect(list.body.messages.every((m) => m.status === "scheduled")).toBe(true);
    expect(list.body.total).toBe(list.body.messages.length);

    const page = await call<{ messages: MessageRecord[]; total: number; limit: number; offset: number }>(server, "GET", "/api/messages/scheduled?limit=1&offset=1");
    expect([page.body.messages.length, page.body.total, page.body.limit, page.body.offset]).toEqual([1, list.body.total, 1, 1]);
    expect(page.body.messages[0]!.id).toBe(list.body.messages[1]!.id);
    expectBadField(await call(server, "GET", "/api/messages/scheduled?limit=0"), "limit");
    expectBadField(await call(server, "GET", "/api/messages/scheduled?offset=-1"), "offset");
    for (const m of [later, soonest, middle]) await cancel(server, m.message_id);
  });

  test("Idempotency-Key: a retry answers the first answer and schedules nothing new, also after the message went out", async () => {
    const phone = newPhone();
    const text = `idempotent ${crypto.randomUUID()}`;
    const key = `sched-${crypto.randomUUID()}`;
    const at = iso(Date.now() + 1_500);
    const first = await schedule(server, phone, text, at, { "idempotency-key": key });
    expect(first.status).toBe(200);
    const retry = await schedule(server, phone, text, at, { "idempotency-key": key });
    expect([retry.status, retry.headers.get("idempotent-replayed"), retry.body]).toEqual([200, "true", first.body]);
    expectError(await schedule(server, phone, `${text} changed`, at, { "idempotency-key": key }), 409, "CONFLICT");

    await waitFor("the send", ON_TIME_MS + SLACK_MS + 1_500, () => sends(text) > 0);
    // send_at has passed: the retry still answers what the first request was answered.
    const afterwards = await schedule(server, phone, text, at, { "idempotency-key": key });
    expect([afterwards.status, afterwards.body]).toEqual([200, first.body]);
    const history = await call<{ total: number }>(server, "GET", `/api/messages/${encodeURIComponent(phone)}`);
    expect(history.body.total).toBe(1);
    await Bun.sleep(1_000);
    expect(sends(text)).toBe(1);
  });

  test("over tRPC: send with send_at, the waiting list and cancel", async () => {
    const client = createClient({ url: server.url, apiKey: server.apiKey });
    const phone = newPhone();
    const sent = await client.messages.send.mutate({ phone, message: "via tRPC, later", send_at: iso(Date.now() + 3_600_000) });
    expect(sent.status).toBe("scheduled");
    const list = await client.messages.scheduled.query({ limit: 100 });
    expect(list.messages.some((m) => m.id === sent.message_id)).toBe(true);
    const canceled = await client.messages.cancel.mutate({ id: sent.message_id });
    expect(canceled.message.status).toBe("canceled");
    expect((await trpcFailure(client.messages.cancel.mutate({ id: sent.message_id }))).code).toBe("CONFLICT");
    expect((await trpcFailure(client.messages.send.mutate({ phone, message: "x", send_at: "2020-01-01T00:00:00Z" }))).message).toContain("send_at");
  });
});

test("a message due while the server is down (SIGKILL) is sent at once after the restart", async () => {
  const db = await testDatabase();
  dbs.push(db);
  const apiKey = newApiKey();
  const first = await startServer({ db, apiKey, env: twilioEnv(fake) });
  extra.push(first);
  const phone = newPhone();
  const text = `after downtime ${crypto.randomUUID()}`;
  // Due 3 s from now: the kill comes first, and the restart after.
  const { message_id: id } = await scheduleOk(first, phone, text, Date.now() + 3_000);
  first.kill();
  await gone(first);
  await Bun.sleep(4_000);
  expect(sends(text)).toBe(0);
  const second = await startServer({ db, apiKey, env: twilioEnv(fake) });
  extra.push(second);
  const up = Date.now();
  await waitFor("the overdue send after the restart", ON_TIME_MS + SLACK_MS, () => sends(text) > 0, () => second.stdout);
  expect(receivedAt.get(text)![0]! - up).toBeLessThan(ON_TIME_MS + SLACK_MS);
  await waitFor("status sent", 5_000, async () => (await record(second, phone, id)).status === "sent");
  second.kill();
});

test("one API process and two workers on one database: each scheduled message is sent exactly once", async () => {
  const db = await testDatabase();
  dbs.push(db);
  const apiKey = newApiKey();
  const env = twilioEnv(fake);
  const api = await startServer({ db, apiKey, mode: "api", env });
  extra.push(api);
  const workers: Spawned[] = [];
  for (let i = 0; i < 2; i++) {
    const w = await spawnServer({ db, apiKey, mode: "worker", env });
    extra.push(w);
    workers.push(w);
  }
  const output = () => workers.map((w, i) => `--- worker ${i} ---\n${w.stdout.slice(-3000)}\n${w.stderr.slice(-1000)}`).join("\n");
  for (const w of workers) await waitFor("a worker sending scheduled messages", 15_000, () => w.stdout.includes("sending scheduled messages"), output);

  const run = crypto.randomUUID();
  const texts: string[] = [];
  // Each one 1.5 s to 2.25 s ahead of its own request, so none is in the past however long the others took.
  for (let i = 0; i < 40; i++) {
    const text = `cluster ${run} ${i}`;
    texts.push(text);
    await scheduleOk(api, newPhone(), text, Date.now() + 1_500 + (i % 4) * 250);
  }
  await waitFor("every scheduled message at the network", 20_000, () => texts.every((t) => sends(t) > 0), output);
  await Bun.sleep(1_500);
  expect(texts.filter((t) => sends(t) !== 1)).toEqual([]);
  // The workers sent them all (each logs what it sent; the lines reach this process a little later).
  const logged = () => workers.reduce((n, w) => n + (w.stdout.match(/scheduled message sent/g) ?? []).length, 0);
  await waitFor("a log line for each send", 5_000, () => logged() >= texts.length, output);
  expect(logged()).toBe(texts.length);
  const list = await call<{ total: number }>(api, "GET", "/api/messages/scheduled");
  expect(list.body.total).toBe(0);
  // An API process sends nothing scheduled.
  expect(api.stdout).not.toContain("sending scheduled messages");
});
