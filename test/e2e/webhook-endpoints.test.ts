// Outbound webhook endpoints and the event log (docs/webhooks.md) through the real server:
// CRUD over REST and tRPC, the secret shown only at creation and rotation, 404s, the
// field named by every 400, the URL rules, GET /api/events with poll's cursor rule, and
// the deliveries, replay and retry answers. The servers run in `api` mode, which makes no
// delivery (docs/webhooks.md), so the delivery rows stay as the API left them.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { createClient } from "../../src/client";
import { isoTime } from "../../src/messages/time";
import { call, expectStrictlyIncreasing, expectTimestamp, inbound, micros, newPhone, send, trpcFailure as failure, type Reply } from "./api";
import { startServer, type Server } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

interface Endpoint {
  id: string;
  url: string;
  events: string[] | null;
  description: string | null;
  enabled: boolean;
  disabled_reason: string | null;
  created_at: string;
  updated_at: string;
  secret?: string;
}
interface Delivery {
  id: string;
  event_id: string;
  event_type: string;
  state: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  created_at: string;
}
interface Event {
  id: string;
  type: string;
  timestamp: string;
  data: Record<string, unknown>;
}
interface EventsPage {
  success: boolean;
  events: Event[];
  count: number;
  has_more: boolean;
}
interface ErrorReply {
  success: false;
  error: { code: string; message: string };
}

const ENDPOINT_ID = /^we_[0-9a-f]{32}$/;
/** `whsec_` + base64 of 32 bytes. */
const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const RECEIVER = "http://127.0.0.1:9/hooks/textwire";
const ENDPOINT_FIELDS = ["created_at", "description", "disabled_reason", "enabled", "events", "id", "updated_at", "url"];

let server: Server;
beforeAll(async () => {
  server = await startServer({ mode: "api", env: { ALLOW_PRIVATE_URLS: "true" } });
}, 60_000);
afterAll(() => server?.kill());

const api = <T>(method: string, path: string, body?: unknown, key?: string | null) =>
  call<T>(server, method, path, { ...(body === undefined ? {} : { body }), ...(key === undefined ? {} : { key }) });

function ok<T>(reply: Reply<T>, status = 200): T {
  if (reply.status !== status) throw new Error(`expected ${status}, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  return reply.body;
}

/** A 4xx in the error envelope whose message names `field`. */
function expectError(reply: Reply<unknown>, status: number, code: string, field?: string): void {
  if (reply.status !== status) throw new Error(`expected ${status}, got ${reply.status}: ${reply.text.slice(0, 500)}`);
  const body = reply.body as ErrorReply;
  expect(body.success).toBe(false);
  expect(body.error.code).toBe(code);
  if (field) expect(body.error.message).toStartWith(`${field}: `);
}

async function createEndpoint(body: Record<string, unknown> = { url: RECEIVER }): Promise<Endpoint> {
  return ok(await api<{ success: boolean; endpoint: Endpoint }>("POST", "/api/webhook-endpoints", body), 201).endpoint;
}

/** Every event of `type` after `since`, page by page, following the cursor. */
async function allEvents(query: { since?: string; type?: string; limit?: number } = {}): Promise<Event[]> {
  const out: Event[] = [];
  let since = query.since;
  for (let page = 0; page < 1000; page++) {
    const params = new URLSearchParams();
    if (since) params.set("since", since);
    if (query.type) params.set("type", query.type);
    params.set("limit", String(query.limit ?? 100));
    const body = ok(await api<EventsPage>("GET", `/api/events?${params}`));
    out.push(...body.events);
    if (!body.has_more) return out;
    since = body.events.at(-1)!.timestamp;
  }
  throw new Error("events did not end after 1000 pages");
}

/** The event of that type about that message. */
async function eventOf(type: string, messageId: string): Promise<Event> {
  const found = (await allEvents({ type })).filter((e) => e.data.id === messageId);
  expect(found).toHaveLength(1);
  return found[0]!;
}

const deliveries = async (id: string, query = "") =>
  ok(await api<{ success: boolean; deliveries: Delivery[]; count: number }>("GET", `/api/webhook-endpoints/${id}/deliveries${query}`));

/** 1 µs before a timestamp, as ISO: a `since` that takes the event at that timestamp. */
const justBefore = (timestamp: string) => isoTime(micros(timestamp) - 1);

describe("endpoints over REST", () => {
  test("create answers 201 with the endpoint and its secret (whsec_, 32 random bytes)", async () => {
    const e = await createEndpoint({ url: RECEIVER, events: ["message.received", "workflow.run_failed"], description: "CRM sync" });
    expect(Object.keys(e).sort()).toEqual([...ENDPOINT_FIELDS, "secret"].sort());
    expect(e).toMatchObject({ url: RECEIVER, events: ["message.received", "workflow.run_failed"], description: "CRM sync", enabled: true, disabled_reason: null });
    expect(e.id).toMatch(ENDPOINT_ID);
    expect(e.secret).toMatch(SECRET);
    expect(Buffer.from(e.secret!.slice("whsec_".length), "base64")).toHaveLength(32);
    expectTimestamp(e.created_at);
    expect(e.updated_at).toBe(e.created_at);
    // Each endpoint its own id and secret.
    const other = await createEndpoint();
    expect(other.id).not.toBe(e.id);
    expect(other.secret).not.toBe(e.secret);
  });

  test("without events or description: events null (every type), description null", async () => {
    const e = await createEndpoint({ url: RECEIVER });
    expect(e).toMatchObject({ events: null, description: null, enabled: true });
  });

  test("list and get show the endpoint but never its secret", async () => {
    const e = await createEndpoint({ url: `${RECEIVER}?list`, description: "listed" });
    const list = await api<{ success: boolean; endpoints: Endpoint[] }>("GET", "/api/webhook-endpoints");
    const { endpoints } = ok(list);
    const listed = endpoints.find((x) => x.id === e.id);
    expect(listed).toEqual({ ...e, secret: undefined } as unknown as Endpoint);
    for (const x of endpoints) expect(Object.keys(x).sort()).toEqual(ENDPOINT_FIELDS);
    // Oldest first.
    const created = endpoints.map((x) => x.created_at);
    expect([...created].sort()).toEqual(created);
    const got = await api<{ success: boolean; endpoint: Endpoint }>("GET", `/api/webhook-endpoints/${e.id}`);
    expect(ok(got).endpoint).toEqual(listed!);
    expect(list.text).not.toContain(e.secret!);
    expect(got.text).not.toContain(e.secret!);
    expect(got.text).not.toContain("whsec_");
  });

  test("PATCH changes what is given and nothing else", async () => {
    const e = await createEndpoint({ url: RECEIVER, events: ["message.received"], description: "before" });
    const patched = ok(await api<{ endpoint: Endpoint }>("PATCH", `/api/webhook-endpoints/${e.id}`, { events: ["message.status_updated"] })).endpoint;
    expect(patched).toMatchObject({ id: e.id, url: RECEIVER, events: ["message.status_updated"], description: "before", enabled: true });
    expect(micros(patched.updated_at)).toBeGreaterThanOrEqual(micros(e.updated_at));
    expect(patched.created_at).toBe(e.created_at);
    expect("secret" in patched).toBe(false);

    const cleared = ok(await api<{ endpoint: Endpoint }>("PATCH", `/api/webhook-endpoints/${e.id}`, { events: null, description: null, url: `${RECEIVER}/v2` })).endpoint;
    expect(cleared).toMatchObject({ events: null, description: null, url: `${RECEIVER}/v2` });

    const disabled = ok(await api<{ endpoint: Endpoint }>("PATCH", `/api/webhook-endpoints/${e.id}`, { enabled: false })).endpoint;
    expect(disabled).toMatchObject({ enabled: false, disabled_reason: null });
    expect(ok(await api<{ endpoint: Endpoint }>("GET", `/api/webhook-endpoints/${e.id}`)).endpoint.enabled).toBe(false);
    const enabled = ok(await api<{ endpoint: Endpoint }>("PATCH", `/api/webhook-endpoints/${e.id}`, { enabled: true })).endpoint;
    expect(enabled).toMatchObject({ enabled: true, disabled_reason: null, url: `${RECEIVER}/v2` });
  });

  test("rotate-secret (no body) answers a new secret once; the endpoint is otherwise unchanged", async () => {
    const e = await createEndpoint();
    const res = await server.fetch(`/api/webhook-endpoints/${e.id}/rotate-secret`, { method: "POST" });
    expect(res.status).toBe(200);
    const rotated = ((await res.json()) as { success: boolean; endpoint: Endpoint }).endpoint;
    expect(rotated.secret).toMatch(SECRET);
    expect(rotated.secret).not.toBe(e.secret);
    expect(rotated).toMatchObject({ id: e.id, url: e.url, events: e.events, enabled: true });
    const again = ok(await api<{ endpoint: Endpoint }>("POST", `/api/webhook-endpoints/${e.id}/rotate-secret`, {})).endpoint;
    expect(again.secret).not.toBe(rotated.secret);
    const got = await api("GET", `/api/webhook-endpoints/${e.id}`);
    for (const secret of [e.secret!, rotated.secret!, again.secret!]) expect(got.text).not.toContain(secret);
  });

  test("DELETE removes the endpoint: then 404 on every route of it", async () => {
    const e = await createEndpoint();
    const res = await server.fetch(`/api/webhook-endpoints/${e.id}`, { method: "DELETE" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, deleted: e.id });
    expect(ok(await api<{ endpoints: Endpoint[] }>("GET", "/api/webhook-endpoints")).endpoints.map((x) => x.id)).not.toContain(e.id);
    expectError(await api("DELETE", `/api/webhook-endpoints/${e.id}`), 404, "NOT_FOUND");
    expectError(await api("GET", `/api/webhook-endpoints/${e.id}`), 404, "NOT_FOUND");
  });
});

describe("404 for an unknown endpoint or delivery", () => {
  const id = "we_00000000000000000000000000000000";
  const cases: [string, string, unknown?][] = [
    ["GET", `/api/webhook-endpoints/${id}`],
    ["PATCH", `/api/webhook-endpoints/${id}`, { enabled: false }],
    ["DELETE", `/api/webhook-endpoints/${id}`],
    ["POST", `/api/webhook-endpoints/${id}/rotate-secret`],
    ["GET", `/api/webhook-endpoints/${id}/deliveries`],
    ["POST", `/api/webhook-endpoints/${id}/replay`, { since: "2026-01-01T00:00:00Z" }],
    ["POST", `/api/webhook-endpoints/${id}/deliveries/dlv_none/retry`],
  ];
  for (const [method, path, body] of cases) {
    test(`${method} ${path}`, async () => {
      const reply = await api<ErrorReply>(method, path, body);
      expectError(reply, 404, "NOT_FOUND");
      expect(reply.body.error.message).toBe(`webhook endpoint ${id} not found`);
    });
  }

  test("PATCH of an unknown endpoint with a bad URL too is 404", async () => {
    expectError(await api("PATCH", `/api/webhook-endpoints/${id}`, { url: "https://127.0.0.1:99999/" }), 404, "NOT_FOUND");
  });

  test("retry of a delivery that is not the endpoint's names the delivery", async () => {
    const e = await createEndpoint();
    const reply = await api<ErrorReply>("POST", `/api/webhook-endpoints/${e.id}/deliveries/dlv_nope/retry`);
    expectError(reply, 404, "NOT_FOUND");
    expect(reply.body.error.message).toContain("dlv_nope");
  });
});

describe("bad input: 400 naming the field", () => {
  let id = "";
  beforeAll(async () => {
    id = (await createEndpoint()).id;
  });

  const creates: [string, unknown, string][] = [
    ["no url", { events: ["message.received"] }, "url"],
    ["url not a string", { url: 42 }, "url"],
    ["url not a URL", { url: "example.com/hook" }, "url"],
    ["url ftp", { url: "ftp://127.0.0.1/hook" }, "url"],
    ["url with credentials", { url: "http://user:pw@127.0.0.1/hook" }, "url"],
    ["url over 2048 characters", { url: `http://127.0.0.1/${"a".repeat(2048)}` }, "url"],
    ["events empty", { url: RECEIVER, events: [] }, "events"],
    ["events not an array", { url: RECEIVER, events: "message.received" }, "events"],
    ["events unknown", { url: RECEIVER, events: ["message.sent"] }, "events.0"],
    ["events repeated", { url: RECEIVER, events: ["message.received", "message.received"] }, "events"],
    ["events null at creation", { url: RECEIVER, events: null }, "events"],
    ["description over 500 characters", { url: RECEIVER, description: "d".repeat(501) }, "description"],
  ];
  for (const [what, body, field] of creates) {
    test(`create, ${what}: names ${field}`, async () => {
      const before = ok(await api<{ endpoints: Endpoint[] }>("GET", "/api/webhook-endpoints")).endpoints.length;
      expectError(await api("POST", "/api/webhook-endpoints", body), 400, "BAD_REQUEST", field);
      expect(ok(await api<{ endpoints: Endpoint[] }>("GET", "/api/webhook-endpoints")).endpoints.length).toBe(before);
    });
  }

  test("a description of exactly 500 characters is taken", async () => {
    expect((await createEndpoint({ url: RECEIVER, description: "d".repeat(500) })).description).toHaveLength(500);
  });

  const patches: [string, unknown, string][] = [
    ["nothing to change", {}, "body"],
    ["enabled as a string", { enabled: "false" }, "enabled"],
    ["url not https or http", { url: "gopher://127.0.0.1/" }, "url"],
    ["events empty", { events: [] }, "events"],
    ["description over 500", { description: "x".repeat(501) }, "description"],
  ];
  for (const [what, body, field] of patches) {
    test(`PATCH, ${what}: names ${field}, nothing changed`, async () => {
      const before = ok(await api<{ endpoint: Endpoint }>("GET", `/api/webhook-endpoints/${id}`)).endpoint;
      expectError(await api("PATCH", `/api/webhook-endpoints/${id}`, body), 400, "BAD_REQUEST", field);
      expect(ok(await api<{ endpoint: Endpoint }>("GET", `/api/webhook-endpoints/${id}`)).endpoint).toEqual(before);
    });
  }

  const queries: [string, string, string][] = [
    ["deliveries", `/api/webhook-endpoints/{id}/deliveries?status=done`, "status"],
    ["deliveries", `/api/webhook-endpoints/{id}/deliveries?limit=0`, "limit"],
    ["deliveries", `/api/webhook-endpoints/{id}/deliveries?limit=101`, "limit"],
    ["deliveries", `/api/webhook-endpoints/{id}/deliveries?limit=ten`, "limit"],
    ["events", "/api/events?since=yesterday", "since"],
    ["events", "/api/events?type=message.sent", "type"],
    ["events", "/api/events?limit=0", "limit"],
  ];
  for (const [what, path, field] of queries) {
    test(`${what} ${path.split("?")[1]}: names ${field}`, async () => {
      expectError(await api("GET", path.replace("{id}", id)), 400, "BAD_REQUEST", field);
    });
  }

  test("replay without since, or with a since that is not ISO 8601: names since", async () => {
    expectError(await api("POST", `/api/webhook-endpoints/${id}/replay`, {}), 400, "BAD_REQUEST", "since");
    expectError(await api("POST", `/api/webhook-endpoints/${id}/replay`, { since: "last week" }), 400, "BAD_REQUEST", "since");
  });

  test("a body that is not JSON is 415 or 400, as on every route", async () => {
    const res = await server.fetch("/api/webhook-endpoints", { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
    expect(res.status).toBe(415);
    const malformed = await server.fetch("/api/webhook-endpoints", { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect(malformed.status).toBe(400);
  });
});

describe("URL rules without ALLOW_PRIVATE_URLS", () => {
  let strict: Server;
  beforeAll(async () => {
    strict = await startServer({ mode: "api" });
  }, 60_000);
  afterAll(() => strict?.kill());

  const refused: [string, string][] = [
    ["http://127.0.0.1:8080/hook", "must be an https URL"],
    ["http://example.com/hook", "must be an https URL"],
    ["https://127.0.0.1/hook", "loopback"],
    ["https://[::1]/hook", "loopback"],
    ["https://localhost/hook", "loopback"],
    ["https://10.1.2.3/hook", "private"],
    ["https://192.168.1.20/hook", "private"],
    ["https://169.254.169.254/latest/meta-data", "link-local"],
    ["https://100.64.0.1/hook", "carrier-grade-nat"],
    ["https://[fd00::1]/hook", "unique-local"],
    ["https://0.0.0.0/hook", "unspecified"],
  ];
  for (const [url, problem] of refused) {
    test(`${url}: 400 naming url (${problem}), nothing stored`, async () => {
      const reply = await call<ErrorReply>(strict, "POST", "/api/webhook-endpoints", { body: { url } });
      expectError(reply, 400, "BAD_REQUEST", "url");
      expect(reply.body.error.message).toContain(problem);
    });
  }

  test("a public https address is taken; PATCH to a private one is refused", async () => {
    const created = await call<{ endpoint: Endpoint }>(strict, "POST", "/api/webhook-endpoints", { body: { url: "https://93.184.215.14/hook" } });
    expect(created.status).toBe(201);
    const id = created.body.endpoint.id;
    expectError(await call(strict, "PATCH", `/api/webhook-endpoints/${id}`, { body: { url: "https://10.0.0.1/hook" } }), 400, "BAD_REQUEST", "url");
    expect((await call<{ endpoints: Endpoint[] }>(strict, "GET", "/api/webhook-endpoints")).body.endpoints.map((e) => e.url)).toEqual(["https://93.184.215.14/hook"]);
  });
});

describe("authentication", () => {
  const routes: [string, string][] = [
    ["POST", "/api/webhook-endpoints"],
    ["GET", "/api/webhook-endpoints"],
    ["GET", "/api/webhook-endpoints/we_x"],
    ["PATCH", "/api/webhook-endpoints/we_x"],
    ["DELETE", "/api/webhook-endpoints/we_x"],
    ["POST", "/api/webhook-endpoints/we_x/rotate-secret"],
    ["GET", "/api/webhook-endpoints/we_x/deliveries"],
    ["POST", "/api/webhook-endpoints/we_x/replay"],
    ["POST", "/api/webhook-endpoints/we_x/deliveries/dlv_x/retry"],
    ["GET", "/api/events"],
  ];
  test("every route needs the API key: 401 with WWW-Authenticate, before the body is read", async () => {
    for (const [method, path] of routes) {
      const reply = await api(method, path, method === "GET" || method === "DELETE" ? undefined : { url: RECEIVER }, null);
      expect([method, path, reply.status]).toEqual([method, path, 401]);
      expect(reply.headers.get("www-authenticate") ?? "").toMatch(/^Bearer/);
    }
  });

  test("a method a path does not serve is 405 with Allow", async () => {
    const put = await api("PUT", "/api/webhook-endpoints/we_x");
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, PATCH, DELETE, HEAD");
    const get = await api("GET", "/api/webhook-endpoints/we_x/rotate-secret");
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    const post = await api("POST", "/api/events", {});
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });
});

describe("GET /api/events", () => {
  test("an inbound message is one message.received event whose data is the message record", async () => {
    const phone = newPhone();
    const m = await inbound(server, phone, "hello events");
    const e = await eventOf("message.received", m.message_id);
    expect(e.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expectTimestamp(e.timestamp);
    expect(e.data).toEqual({ id: m.message_id, phone, message: "hello events", direction: "inbound", timestamp: m.timestamp, status: "received", reply_to: null, media: [], reactions: [], read_at: null, edited_at: null, unsent_at: null, chat_id: `dm_${phone.slice(1)}`, line_id: "ln_default" });
  });

  test("a send is a message.status_updated event with previous_status; no message.received for it", async () => {
    const phone = newPhone();
    const sent = await send(server, phone, "out it goes");
    const statuses = (await allEvents({ type: "message.status_updated" })).filter((e) => e.data.id === sent.message_id);
    expect(statuses.length).toBeGreaterThanOrEqual(1);
    const last = statuses.at(-1)!;
    expect(last.data).toMatchObject({ id: sent.message_id, phone, message: "out it goes", direction: "outbound", status: "delivered", previous_status: "queued" });
    for (const e of statuses) expect(e.data.previous_status).not.toBe(e.data.status);
    expect((await allEvents({ type: "message.received" })).filter((e) => e.data.id === sent.message_id)).toEqual([]);
  });

  test("the cursor rule: oldest first, since exclusive, has_more until the last page, each event once", async () => {
    const phone = newPhone();
    const first = await inbound(server, phone, "c0");
    const start = (await eventOf("message.received", first.message_id)).timestamp;
    const later = [await inbound(server, phone, "c1"), await send(server, phone, "c2"), await inbound(server, phone, "c3")];

    const all = await allEvents({ since: start });
    expect(all.map((e) => e.data.id)).toEqual(later.map((m) => m.message_id));
    expectStrictlyIncreasing([start, ...all.map((e) => e.timestamp)]);

    const seen: Event[] = [];
    let since = start;
    for (let i = 0; i < 3; i++) {
      const page = ok(await api<EventsPage>("GET", `/api/events?since=${encodeURIComponent(since)}&limit=1`));
      expect(page).toMatchObject({ success: true, count: 1, has_more: i < 2 });
      seen.push(...page.events);
      since = page.events[0]!.timestamp;
    }
    expect(seen).toEqual(all);
    expect(ok(await api<EventsPage>("GET", `/api/events?since=${encodeURIComponent(since)}`))).toEqual({ success: true, events: [], count: 0, has_more: false });

    // The type filter: only the inbound ones, the same cursor.
    const received = ok(await api<EventsPage>("GET", `/api/events?since=${encodeURIComponent(start)}&type=message.received`));
    expect(received.events.map((e) => e.data.id)).toEqual([later[0]!.message_id, later[2]!.message_id]);
    expect(received.has_more).toBe(false);
    // 1 µs before an event takes that event.
    const fromSecond = ok(await api<EventsPage>("GET", `/api/events?since=${encodeURIComponent(justBefore(all[1]!.timestamp))}`));
    expect(fromSecond.events.map((e) => e.id)).toEqual(all.slice(1).map((e) => e.id));
  });

  test("limit above 100 is clamped to 100", async () => {
    const page = ok(await api<EventsPage>("GET", "/api/events?limit=1000"));
    expect(page.count).toBeLessThanOrEqual(100);
  });
});

describe("deliveries, replay and retry", () => {
  test("an event is queued for each enabled endpoint subscribed to its type, and only for those", async () => {
    const wanted = await createEndpoint({ url: RECEIVER, events: ["message.received"] });
    const everything = await createEndpoint({ url: RECEIVER });
    const statusOnly = await createEndpoint({ url: RECEIVER, events: ["message.status_updated"] });
    const off = await createEndpoint({ url: RECEIVER });
    ok(await api("PATCH", `/api/webhook-endpoints/${off.id}`, { enabled: false }));

    const m = await inbound(server, newPhone(), "queued for two");
    const event = await eventOf("message.received", m.message_id);
    for (const e of [wanted, everything]) {
      const { deliveries: rows, count } = await deliveries(e.id);
      expect(count).toBe(rows.length);
      const d = rows.find((x) => x.event_id === event.id);
      expect(d).toBeDefined();
      expect(d!.id).toMatch(/^dlv_/);
      expect(d).toMatchObject({ event_type: "message.received", state: "pending", attempts: 0, last_status: null, last_error: null, last_attempt_at: null });
      expectTimestamp(d!.created_at);
      expectTimestamp(d!.next_attempt_at);
    }
    expect((await deliveries(statusOnly.id)).deliveries.map((d) => d.event_id)).not.toContain(event.id);
    expect((await deliveries(off.id)).deliveries.map((d) => d.event_id)).not.toContain(event.id);
  });

  test("the listing: newest first, the status filter, the limit", async () => {
    const e = await createEndpoint({ url: RECEIVER, events: ["message.received"] });
    const phone = newPhone();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await inbound(server, phone, `d${i}`)).message_id);
      // Creation times are milliseconds: each delivery a millisecond of its own, so "newest first" has one answer.
      await Bun.sleep(3);
    }
    const events = await Promise.all(ids.map((id) => eventOf("message.received", id)));
    const all = await deliveries(e.id);
    expect(all.deliveries.map((d) => d.event_id)).toEqual(events.map((ev) => ev.id).reverse());
    expect((await deliveries(e.id, "?status=pending")).deliveries).toHaveLength(3);
    expect((await deliveries(e.id, "?status=succeeded")).deliveries).toEqual([]);
    expect((await deliveries(e.id, "?status=failed")).deliveries).toEqual([]);
    const limited = await deliveries(e.id, "?limit=2");
    expect(limited.deliveries.map((d) => d.event_id)).toEqual(all.deliveries.slice(0, 2).map((d) => d.event_id));
    expect(limited.count).toBe(2);
  });

  test("replay queues every event after since of the endpoint's types, for that endpoint", async () => {
    const phone = newPhone();
    const a = await inbound(server, phone, "replay a");
    const b = await inbound(server, phone, "replay b");
    await send(server, phone, "not subscribed");
    const [ea, eb] = [await eventOf("message.received", a.message_id), await eventOf("message.received", b.message_id)];
    // Created after the events: it has no delivery of them until the replay.
    const late = await createEndpoint({ url: RECEIVER, events: ["message.received"] });
    expect((await deliveries(late.id)).deliveries).toEqual([]);

    const replay = (since: string) => api<{ success: boolean; queued: number }>("POST", `/api/webhook-endpoints/${late.id}/replay`, { since });
    expect(ok(await replay(eb.timestamp))).toEqual({ success: true, queued: 0 });
    expect(ok(await replay(justBefore(ea.timestamp)))).toEqual({ success: true, queued: 2 });
    const rows = (await deliveries(late.id)).deliveries;
    expect(rows.map((d) => d.event_id).sort()).toEqual([ea.id, eb.id].sort());
    for (const d of rows) expect(d).toMatchObject({ state: "pending", attempts: 0 });
    // Again: the same deliveries queued again, no new ones.
    expect(ok(await replay(justBefore(ea.timestamp))).queued).toBe(2);
    expect((await deliveries(late.id)).count).toBe(2);
  });

  test("retry makes one delivery due now, a new series", async () => {
    const e = await createEndpoint({ url: RECEIVER, events: ["message.received"] });
    const m = await inbound(server, newPhone(), "retry me");
    const event = await eventOf("message.received", m.message_id);
    const [d] = (await deliveries(e.id)).deliveries;
    expect(d!.event_id).toBe(event.id);
    const before = Date.now();
    const res = await server.fetch(`/api/webhook-endpoints/${e.id}/deliveries/${d!.id}/retry`, { method: "POST" });
    expect(res.status).toBe(200);
    const { delivery } = (await res.json()) as { success: boolean; delivery: Delivery };
    expect(delivery).toMatchObject({ id: d!.id, event_id: event.id, event_type: "message.received", state: "pending", attempts: 0 });
    expect(Date.parse(delivery.next_attempt_at!)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(Date.parse(delivery.next_attempt_at!)).toBeGreaterThanOrEqual(before - 60_000);
    // Another endpoint's delivery is not this one's.
    const other = await createEndpoint();
    expectError(await api("POST", `/api/webhook-endpoints/${other.id}/deliveries/${d!.id}/retry`), 404, "NOT_FOUND");
  });

  test("deleting an endpoint deletes its deliveries; the events stay", async () => {
    const e = await createEndpoint({ url: RECEIVER, events: ["message.received"] });
    const m = await inbound(server, newPhone(), "before delete");
    expect((await deliveries(e.id)).count).toBe(1);
    ok(await api("DELETE", `/api/webhook-endpoints/${e.id}`));
    expectError(await api("GET", `/api/webhook-endpoints/${e.id}/deliveries`), 404, "NOT_FOUND");
    expect((await eventOf("message.received", m.message_id)).data.id).toBe(m.message_id);
    const rows = await server.db.query("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?", e.id);
    expect(Number((rows[0] as { n: number }).n)).toBe(0);
  });
});

describe("the same through tRPC", () => {
  let client: ReturnType<typeof createClient>;
  beforeAll(() => {
    client = createClient({ url: server.url, apiKey: server.apiKey });
  });


  test("create, get, list, update, rotate, delete: the same records as REST", async () => {
    const created = await client.webhookEndpoints.create.mutate({ url: RECEIVER, events: ["workflow.run_failed"], description: "tRPC" });
    expect(created.success).toBe(true);
    expect(created.endpoint.secret).toMatch(SECRET);
    const { endpoint } = await client.webhookEndpoints.get.query({ id: created.endpoint.id });
    expect(endpoint as unknown).toEqual(ok(await api<{ endpoint: Endpoint }>("GET", `/api/webhook-endpoints/${endpoint.id}`)).endpoint);
    expect("secret" in endpoint).toBe(false);
    expect((await client.webhookEndpoints.list.query()).endpoints.map((e) => e.id)).toContain(endpoint.id);
    const updated = await client.webhookEndpoints.update.mutate({ id: endpoint.id, events: null, enabled: false });
    expect(updated.endpoint).toMatchObject({ events: null, enabled: false, description: "tRPC" });
    const rotated = await client.webhookEndpoints.rotateSecret.mutate({ id: endpoint.id });
    expect(rotated.endpoint.secret).not.toBe(created.endpoint.secret);
    expect(await client.webhookEndpoints.delete.mutate({ id: endpoint.id })).toEqual({ success: true, deleted: endpoint.id });
    expect(await failure(client.webhookEndpoints.get.query({ id: endpoint.id }))).toMatchObject({ code: "NOT_FOUND" });
  });

  test("deliveries, replay, retry and events answer as over REST", async () => {
    const e = await client.webhookEndpoints.create.mutate({ url: RECEIVER, events: ["message.received"] });
    const m = await inbound(server, newPhone(), "via trpc");
    const events = await client.events.list.query({ type: "message.received", since: justBefore(m.timestamp) });
    expect(events.events.map((x) => ("id" in x.data ? x.data.id : undefined))).toEqual([m.message_id]);
    const { deliveries: rows } = await client.webhookEndpoints.deliveries.query({ id: e.endpoint.id, status: "pending" });
    expect(rows).toHaveLength(1);
    const retried = await client.webhookEndpoints.retry.mutate({ id: e.endpoint.id, delivery_id: rows[0]!.id });
    expect(retried.delivery).toMatchObject({ id: rows[0]!.id, state: "pending", attempts: 0 });
    expect(await client.webhookEndpoints.replay.mutate({ id: e.endpoint.id, since: justBefore(m.timestamp) })).toEqual({ success: true, queued: 1 });
  });

  test("validation and auth are the same: BAD_REQUEST naming the field, UNAUTHORIZED without a key", async () => {
    const bad = await failure(client.webhookEndpoints.create.mutate({ url: "ftp://127.0.0.1/" }));
    expect(bad).toMatchObject({ code: "BAD_REQUEST" });
    expect(bad.message).toStartWith("url: ");
    const events = await failure(client.webhookEndpoints.create.mutate({ url: RECEIVER, events: [] }));
    expect(events.message).toStartWith("events: ");
    const keyless = createClient({ url: server.url, apiKey: "" });
    expect(await failure(keyless.webhookEndpoints.list.query())).toMatchObject({ code: "UNAUTHORIZED" });
  });
});
