// The floor (test/bench/floor.ts) answers the four hot routes as Textwire does: the same
// JSON shapes, statuses and error messages, on SQLite and on PostgreSQL, and it shares a
// database with Textwire (each leaves the other's migrations as they are).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { createTestDatabase, type TestDatabase } from "../support/postgres";
import { ROOT, newApiKey, onPostgres, sqliteDatabase, startServer, testOnSqlite, type Server } from "./harness";

setDefaultTimeout(60_000);

/** Something that answers HTTP with a key: Textwire or the floor. */
interface Target {
  url: string;
  key: string;
}

interface Floor extends Target {
  proc: Subprocess<"ignore", "pipe", "inherit">;
}

async function startFloor(databaseUrl: string): Promise<Floor> {
  const key = newApiKey();
  const proc = Bun.spawn(["bun", "test/bench/floor.ts"], {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", DATABASE_URL: databaseUrl, API_KEYS: `other-key,${key}` },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = proc.stdout.getReader();
  let out = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the floor exited before listening: ${out}`);
    out += new TextDecoder().decode(value);
    const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url) {
      reader.releaseLock();
      return { url, key, proc };
    }
  }
}

async function stopFloor(floor: Floor | undefined): Promise<void> {
  if (!floor) return;
  floor.proc.kill("SIGTERM");
  expect(await floor.proc.exited).toBe(0);
}

interface Answer {
  status: number;
  body: unknown;
}

async function call(t: Target, method: string, path: string, opts: { body?: unknown; raw?: string; type?: string; key?: string | null } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  const key = opts.key === undefined ? t.key : opts.key;
  if (key) headers.authorization = `Bearer ${key}`;
  const body = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  if (body !== undefined) headers["content-type"] = opts.type ?? "application/json";
  const res = await fetch(t.url + path, { method, headers, body });
  return { status: res.status, body: await res.json() };
}

/** An answer as sent: its status and its text, keys in their order. */
async function exact(t: Target, path: string): Promise<{ status: number; text: string }> {
  const res = await fetch(t.url + path, { headers: { authorization: `Bearer ${t.key}` } });
  return { status: res.status, text: await res.text() };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_UTC_US = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

/** The answer with ids and times replaced by what they are (their values differ between servers). */
function shape(value: unknown): unknown {
  if (typeof value === "string") return UUID.test(value) ? "<uuid>" : ISO_UTC_US.test(value) ? "<time>" : value;
  if (Array.isArray(value)) return value.map(shape);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shape(v)]));
  return value;
}

const phoneOf = (n: number) => `+1415555${String(n).padStart(4, "0")}`;

/**
 * The four routes, their common errors and the opt-out rule included, against one server;
 * every answer in order.
 * `phone` is one no other scenario on that database uses.
 */
async function scenario(t: Target, phone: string): Promise<Answer[]> {
  const answers: Answer[] = [];
  const record = async (a: Promise<Answer>) => {
    const answer = await a;
    answers.push(answer);
    return answer;
  };
  const sent = await record(call(t, "POST", "/api/send", { body: { phone, message: 'Your "order"\nhas shipped. 🚚' } }));
  const first = await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: "Is it on its way?", id: `net-${phone}` } }));
  const again = await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: "Is it on its way?", id: `net-${phone}` } }));
  expect(again.body).toEqual(first.body);
  await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: "no id" } }));
  await record(call(t, "GET", `/api/messages/${encodeURIComponent(phone)}?limit=500`));
  await record(call(t, "GET", `/api/messages/${phone}?limit=1&offset=1`));
  await record(call(t, "GET", `/api/messages/${encodeURIComponent(phone)}?offset=99`));
  const since = (sent.body as { timestamp: string }).timestamp;
  await record(call(t, "GET", `/api/messages/poll?since=${encodeURIComponent(since)}&phone=${encodeURIComponent(phone)}`));
  await record(call(t, "GET", `/api/messages/poll?since=${encodeURIComponent(since)}&phone=${encodeURIComponent(phone)}&limit=1`));
  // An unencoded + arrives as a space, and is read back as +.
  await record(call(t, "GET", `/api/messages/poll?since=${encodeURIComponent(since)}&phone=${phone}`));
  // Errors.
  await record(call(t, "POST", "/api/send", { body: { phone: "+1", message: "   " } }));
  await record(call(t, "POST", "/api/send", { body: { phone: 14155550123 } }));
  await record(call(t, "POST", "/api/send", { body: { phone, message: "a\u0007b" } }));
  await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: "x", id: "" } }));
  await record(call(t, "POST", "/api/send", { raw: '{"phone":', type: "application/json" }));
  await record(call(t, "POST", "/api/send", { raw: "{}", type: "text/plain" }));
  await record(call(t, "GET", "/api/messages/poll?since=yesterday&limit=0"));
  await record(call(t, "GET", `/api/messages/${encodeURIComponent(phone)}?limit=1.5&offset=-1`));
  await record(call(t, "GET", "/api/messages/12345"));
  await record(call(t, "GET", "/api/messages/poll", { key: null }));
  await record(call(t, "GET", "/api/messages/poll", { key: "not-a-key" }));
  // Opt-outs: STOP refuses the next send (403, nothing stored), START allows it again.
  await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: " Stop. " } }));
  await record(call(t, "POST", "/api/send", { body: { phone, message: "still there?" } }));
  await record(call(t, "POST", "/webhooks/loopback", { body: { phone, message: "START" } }));
  await record(call(t, "POST", "/api/send", { body: { phone, message: "welcome back" } }));
  await record(call(t, "GET", `/api/messages/${encodeURIComponent(phone)}?limit=3`));
  return answers;
}

/**
 * What the floor only reads, written through Textwire on `phone`'s conversation (after its
 * scenario): the contact's reaction and ours, a read receipt, our edit and unsend, the
 * contact's edit and our read mark.
 */
async function decorate(t: Target, phone: string): Promise<void> {
  const page = (await call(t, "GET", `/api/messages/${encodeURIComponent(phone)}?limit=100`)).body as { messages: { id: string; direction: string; message: string }[] };
  const [welcome, shipped] = page.messages.filter((m) => m.direction === "outbound");
  const asked = page.messages.find((m) => m.message === "Is it on its way?"); // the one with a network id
  const answers = [
    await call(t, "POST", "/webhooks/loopback", { body: { phone, reaction: { message_id: shipped!.id, reaction: "love" } } }),
    await call(t, "POST", `/api/messages/${shipped!.id}/reactions`, { body: { reaction: "like" } }),
    await call(t, "POST", `/api/messages/${asked!.id}/reactions`, { body: { reaction: "laugh" } }),
    await call(t, "POST", "/webhooks/loopback", { body: { phone, read: { message_id: welcome!.id } } }),
    await call(t, "POST", `/api/messages/${welcome!.id}/edit`, { body: { message: "welcome back!" } }),
    await call(t, "POST", `/api/messages/${shipped!.id}/unsend`),
    await call(t, "POST", "/webhooks/loopback", { body: { phone, edit: { id: `net-${phone}`, message: "Is it on its way yet?" } } }),
    await call(t, "POST", `/api/contacts/${encodeURIComponent(phone)}/read`),
  ];
  expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
}

describe("the floor answers as Textwire does", () => {
  let textwire: Server | undefined;
  let expected: unknown[] = [];
  const dir = mkdtempSync(join(tmpdir(), "floor-test-"));
  const phone = phoneOf(Math.floor(Math.random() * 5000));

  beforeAll(async () => {
    textwire = await startServer({ db: sqliteDatabase() });
    expected = (await scenario({ url: textwire.url, key: textwire.apiKey }, phone)).map(shape);
  }, 60_000);
  afterAll(async () => {
    textwire?.kill();
    await textwire?.db.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  testOnSqlite("on SQLite", async () => {
    const floor = await startFloor(join(dir, "floor.db"));
    try {
      expect((await scenario(floor, phone)).map(shape)).toEqual(expected);
    } finally {
      await stopFloor(floor);
    }
  });

  testOnSqlite("on a SQLite file Textwire migrated and wrote, which it leaves as it is", async () => {
    const theirs = { url: textwire!.url, key: textwire!.apiKey };
    await decorate(theirs, phone);
    const floor = await startFloor(textwire!.db.url);
    try {
      for (const path of [`/api/messages/${encodeURIComponent(phone)}?limit=100`, "/api/messages/poll?since=2000-01-01"]) {
        expect(await exact(floor, path)).toEqual(await exact(theirs, path));
      }
    } finally {
      await stopFloor(floor);
    }
  });

  // In the PostgreSQL pass (TEST_DIALECT=postgres), as every end-to-end test on PostgreSQL.
  const testOnPostgres: typeof test = onPostgres ? test : (((..._args: unknown[]) => {}) as unknown as typeof test);
  testOnPostgres("on PostgreSQL, and Textwire then starts on the database the floor migrated", async () => {
    let database: TestDatabase | undefined;
    let floor: Floor | undefined;
    let other: Server | undefined;
    try {
      database = await createTestDatabase();
      floor = await startFloor(database.url);
      expect((await scenario(floor, phone)).map(shape)).toEqual(expected);
      // The same records from the floor and from Textwire, on one database.
      other = await startServer({ env: { DATABASE_URL: database.url } });
      const theirs = { url: other.url, key: other.apiKey };
      await decorate(theirs, phone);
      const path = `/api/messages/${encodeURIComponent(phone)}`;
      for (const route of [path, "/api/messages/poll?since=2000-01-01"]) expect(await exact(floor, route)).toEqual(await exact(theirs, route));
      // And the floor starts again on it, finding nothing to migrate.
      await stopFloor(floor);
      floor = await startFloor(database.url);
      expect((await call(floor, "GET", path)).status).toBe(200);
    } finally {
      other?.kill();
      await stopFloor(floor);
      await database?.drop();
    }
  });
});
