// GET /metrics (docs/operations.md#metrics): hidden without METRICS_TOKEN and from anyone
// without it; with it, a Prometheus text scrape whose counters follow the traffic, whose
// labels are route templates and never a phone number or a raw path, whose queue gauges
// are the database's, on both dialects (on PostgreSQL, with the pool's sizes).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import parse, { type MetricFamily } from "parse-prometheus-text-format";
import { startFakeOpenAI } from "../support/fake-openai";
import { startReceiver, type Receiver } from "../support/webhook-receiver";
import { call, history, inbound, newPhone, send } from "./api";
import { fileServers, onPostgres, testDatabase, waitFor, type Server, type TestDatabase } from "./harness";

setDefaultTimeout(60_000);

const TOKEN = "metrics_" + "k".repeat(24);

interface Scrape {
  text: string;
  families: MetricFamily[];
}

async function scrape(server: Server): Promise<Scrape> {
  const res = await server.fetch("/metrics", {}, TOKEN);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`scrape: ${res.status} ${text}`);
  expect(res.headers.get("content-type")).toStartWith("text/plain");
  return { text, families: parse(text) };
}

/** The sum of a counter's or gauge's samples whose labels include `labels`; undefined when the metric is absent. */
function valueOf(s: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = s.families.find((f) => f.name === name);
  if (!family) return undefined;
  return family.metrics
    .filter((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))
    .reduce((sum, m) => sum + Number(m.value), 0);
}

/** Every label value of the text. The parser folds a labelled histogram into one sample without its labels, so they are read from the lines. */
function labelValues(text: string): { name: string; value: string }[] {
  const found: { name: string; value: string }[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    for (const m of line.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) found.push({ name: m[1]!, value: m[2]! });
  }
  return found;
}

/** A histogram series' count, read from its `_count` line. */
function histogramCount(text: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}_count{`)) continue;
    const values = Object.fromEntries(labelValues(line).map((l) => [l.name, l.value]));
    if (Object.entries(labels).every(([k, v]) => values[k] === v)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const files = fileServers();
const boot = (env: Record<string, string>, db?: TestDatabase): Promise<Server> => files.boot({ env, ...(db ? { db } : {}) });

describe("GET /metrics is hidden", () => {
  test("without METRICS_TOKEN it is 404, whatever is sent", async () => {
    const server = await boot({});
    const res = await server.fetch("/metrics", {}, TOKEN);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ success: false, error: { code: "NOT_FOUND", message: "no route GET /metrics" } });
    expect((await server.fetch("/metrics", { method: "POST" }, TOKEN)).status).toBe(404);
  });

  test("with it, no token, a wrong token or the API key get the same 404 as a path with no route", async () => {
    const server = await boot({ METRICS_TOKEN: TOKEN });
    const attempts: [string, string | null][] = [
      ["no token", null],
      ["a wrong token", TOKEN.slice(0, -1) + "x"],
      ["a longer token", TOKEN + "x"],
      ["the API key", server.apiKey],
    ];
    for (const [what, key] of attempts) {
      const res = await server.fetch("/metrics", {}, key);
      expect({ what, status: res.status }).toEqual({ what, status: 404 });
      expect(await res.json()).toEqual({ success: false, error: { code: "NOT_FOUND", message: "no route GET /metrics" } });
    }
    expect((await server.fetch("/metrics", { headers: { authorization: `Basic ${TOKEN}` } }, null)).status).toBe(404);
    expect((await server.fetch("/metrics", {}, TOKEN)).status).toBe(200);
  });
});

describe("a scrape", () => {
  let server: Server;
  let receiver: Receiver;
  const model = startFakeOpenAI({ kind: "text", text: "We open at nine." });
  const phone = newPhone();
  const optedOut = newPhone();
  let before: Scrape;
  let after: Scrape;
  let sentId = "";

  beforeAll(async () => {
    receiver = startReceiver();
    const db = await testDatabase();
    files.track(db);
    const workflows = join(db.dir, "workflows");
    mkdirSync(workflows);
    // Never due on their own (1 January): run by hand below.
    writeFileSync(join(workflows, "tally.ts"), `export default { name: "tally", schedule: "0 0 1 1 *", async run() {} };\n`);
    writeFileSync(join(workflows, "broken.ts"), `export default { name: "broken", schedule: "0 0 1 1 *", async run() { throw new Error("no"); } };\n`);
    server = await boot(
      { METRICS_TOKEN: TOKEN, ALLOW_PRIVATE_URLS: "true", WORKFLOWS_DIR: workflows, OPENAI_API_KEY: "sk-local-test", OPENAI_BASE_URL: model.baseUrl },
      db,
    );
    before = await scrape(server);

    sentId = (await send(server, phone, "first")).message_id;
    await send(server, phone, "second");
    expect((await history(server, phone)).total).toBe(2);
    // A request refused (400), a path with no route that holds a phone and an id, a tRPC call to no procedure.
    expect((await call(server, "POST", "/api/send", { body: { phone: "nope", message: "x" } })).status).toBe(400);
    expect((await call(server, "GET", `/api/nothing/${encodeURIComponent(phone)}/${sentId}`)).status).toBe(404);
    expect((await call(server, "GET", `/trpc/no.such.${phone.slice(1)}`)).status).toBe(404);
    // Webhook deliveries of the two inbound messages below.
    expect((await call(server, "POST", "/api/webhook-endpoints", { body: { url: receiver.url, events: ["message.received"] } })).status).toBe(201);
    await inbound(server, phone, "hello");
    // A send that fails: scheduled soon, its contact opts out before its time.
    const soon = await call<{ status: string }>(server, "POST", "/api/send", { body: { phone: optedOut, message: "later", send_at: new Date(Date.now() + 3000).toISOString() } });
    expect(soon.body.status).toBe("scheduled");
    await inbound(server, optedOut, "STOP");
    await waitFor("the scheduled send to fail", 10_000, async () => (await history(server, optedOut)).messages.some((m) => m.status === "failed"));
    // One left scheduled, far ahead.
    expect((await call<{ status: string }>(server, "POST", "/api/send", { body: { phone, message: "next month", send_at: new Date(Date.now() + 30 * 86_400_000).toISOString() } })).body.status).toBe("scheduled");
    // And one canceled.
    const canceled = await call<{ message_id: string }>(server, "POST", "/api/send", { body: { phone, message: "never", send_at: new Date(Date.now() + 30 * 86_400_000).toISOString() } });
    expect((await call<{ message: { status: string } }>(server, "POST", `/api/messages/${canceled.body.message_id}/cancel`)).body.message.status).toBe("canceled");
    // Workflow runs, by hand through tRPC as the console runs them.
    expect((await call(server, "POST", "/trpc/workflows.run", { body: { name: "tally" } })).status).toBe(200);
    expect((await call(server, "POST", "/trpc/workflows.run", { body: { name: "broken" } })).status).toBe(200);
    // A generation.
    expect((await call(server, "POST", "/api/generate", { body: { phone, context: [{ role: "user", content: "When do you open?" }] } })).status).toBe(200);
    // An attempt's outcome is counted once the receiver answered.
    await waitFor("both deliveries to be counted", 10_000, async () => (valueOf(await scrape(server), "textwire_webhook_deliveries_total", { state: "succeeded" }) ?? 0) === 2);
    expect(receiver.received).toHaveLength(2);
    after = await scrape(server);
  });

  afterAll(async () => {
    receiver.stop();
    await model.stop();
  });

  const moved = (name: string, labels: Record<string, string>) => (valueOf(after, name, labels) ?? 0) - (valueOf(before, name, labels) ?? 0);

  test("HTTP requests are counted by method, route template and status", () => {
    const counted = (method: string, route: string, status: string) => moved("textwire_http_requests_total", { method, route, status });
    expect(counted("POST", "/api/send", "200")).toBe(5);
    expect(counted("POST", "/api/messages/{id}/cancel", "200")).toBe(1);
    expect(counted("POST", "/api/send", "400")).toBe(1);
    expect(counted("GET", "/api/messages/{phone}", "200")).toBeGreaterThanOrEqual(2);
    expect(counted("POST", "/webhooks/loopback", "200")).toBe(2);
    expect(counted("GET", "unmatched", "404")).toBe(1);
    expect(counted("GET", "/trpc", "404")).toBe(1);
    expect(counted("POST", "/trpc/workflows.run", "200")).toBe(2);
    expect(counted("POST", "/api/generate", "200")).toBe(1);
    expect(histogramCount(after.text, "textwire_http_request_duration_seconds", { method: "POST", route: "/api/send", status: "200" })).toBe(5);
  });

  test("route labels are templates, and no label value holds a phone number, an id or a raw path", () => {
    const values = labelValues(after.text);
    const routes = new Set(values.filter((l) => l.name === "route").map((l) => l.value));
    expect([...routes].sort()).toEqual(
      ["/api/generate", "/api/messages/{id}/cancel", "/api/messages/{phone}", "/api/send", "/api/webhook-endpoints", "/metrics", "/trpc", "/trpc/workflows.run", "/webhooks/loopback", "unmatched"].sort(),
    );
    for (const { name, value } of values) {
      expect({ name, value, phone: /\+?\d{7,}/.test(value) }).toEqual({ name, value, phone: false });
      expect({ name, value, id: /[0-9a-f]{8}-[0-9a-f]{4}-/.test(value) || value.includes(sentId) }).toEqual({ name, value, id: false });
    }
  });

  test("messages are counted by direction, network and the status they reached", () => {
    const messages = (direction: string, status: string) => moved("textwire_messages_total", { direction, network: "loopback", status });
    expect(messages("outbound", "queued")).toBe(3);
    expect(messages("outbound", "delivered")).toBe(2);
    expect(messages("outbound", "scheduled")).toBe(3);
    expect(messages("outbound", "canceled")).toBe(1);
    expect(messages("outbound", "failed")).toBe(1);
    expect(messages("inbound", "received")).toBe(2);
  });

  test("webhook attempts, workflow runs and generations are counted, with their durations", () => {
    expect(moved("textwire_webhook_deliveries_total", { state: "succeeded" })).toBe(2);
    expect(moved("textwire_workflow_runs_total", { workflow: "tally", result: "ok" })).toBe(1);
    expect(moved("textwire_workflow_runs_total", { workflow: "broken", result: "error" })).toBe(1);
    expect(histogramCount(after.text, "textwire_workflow_run_duration_seconds", { workflow: "broken", result: "error" })).toBe(1);
    expect(moved("textwire_generator_requests_total", { result: "ok" })).toBe(1);
    expect(histogramCount(after.text, "textwire_generator_request_duration_seconds", { result: "ok" })).toBe(1);
  });

  test("queue gauges are the database's", async () => {
    const now = await scrape(server);
    const [scheduled] = await server.db.query<{ n: number }>("SELECT count(*) AS n FROM messages WHERE status = 'scheduled'");
    const [pending] = await server.db.query<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'pending'");
    expect(Number(scheduled!.n)).toBe(1);
    expect(valueOf(now, "textwire_scheduled_messages_pending")).toBe(1);
    expect(valueOf(now, "textwire_scheduled_messages_overdue_seconds")).toBe(0);
    expect(valueOf(now, "textwire_webhook_deliveries_pending")).toBe(Number(pending!.n));
    expect(valueOf(now, "textwire_webhook_deliveries_overdue_seconds")).toBe(0);
  });

  test("the process's default metrics are there: memory and event-loop lag", () => {
    for (const name of ["process_resident_memory_bytes", "nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_p99_seconds"]) {
      expect({ name, value: (valueOf(after, name) ?? -1) >= 0 }).toEqual({ name, value: true });
    }
    expect(valueOf(after, "process_resident_memory_bytes")).toBeGreaterThan(0);
    // Declared for retention to count into, with no sample until it purges.
    expect(after.text).toContain("# TYPE textwire_retention_purged_rows_total counter");
  });

  test(onPostgres ? "the pool's sizes are there on PostgreSQL" : "no pool metrics on SQLite", () => {
    if (onPostgres) {
      expect(valueOf(after, "textwire_db_pool_connections")).toBeGreaterThanOrEqual(1);
      expect(valueOf(after, "textwire_db_pool_idle_connections")).toBeGreaterThanOrEqual(0);
      expect(valueOf(after, "textwire_db_pool_waiting_requests")).toBe(0);
    } else {
      expect(valueOf(after, "textwire_db_pool_connections")).toBeUndefined();
    }
  });

  test("a second process on the same database reports the same queue, and its own counters", async () => {
    const other = await boot({ METRICS_TOKEN: TOKEN, WORKFLOWS_DIR: "off" }, server.db);
    const [mine, theirs] = [await scrape(server), await scrape(other)];
    expect(valueOf(theirs, "textwire_scheduled_messages_pending")).toBe(1);
    expect(valueOf(theirs, "textwire_scheduled_messages_pending")).toBe(valueOf(mine, "textwire_scheduled_messages_pending")!);
    expect(valueOf(theirs, "textwire_webhook_deliveries_pending")).toBe(valueOf(mine, "textwire_webhook_deliveries_pending")!);
    expect(valueOf(theirs, "textwire_messages_total", { status: "queued" }) ?? 0).toBe(0);
  });

  test("a send a crash left queued, failed by a maintenance round, is counted failed once, by the process whose round it was", async () => {
    const failed = (s: Scrape) => valueOf(s, "textwire_messages_total", { direction: "outbound", network: "loopback", status: "failed" }) ?? 0;
    const mine = failed(await scrape(server));
    // Stored as a send is, then cut off three minutes ago (the stale-send rule: docs/operations.md).
    const at = (Date.now() - 180_000) * 1000;
    const insert = "INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at) VALUES (?, ?, ?, 'outbound', 'queued', ?, 'loopback', NULL, NULL, ?)";
    await server.db.run(insert, "crash-cut", phone, "cut off", at, at);
    // A start's first round fails it, unless the running server's own round comes first.
    const other = await boot({ METRICS_TOKEN: TOKEN, WORKFLOWS_DIR: "off" }, server.db);
    await waitFor("a maintenance round", 10_000, async () => (await history(server, phone)).messages.find((m) => m.id === "crash-cut")?.status === "failed");
    expect(failed(await scrape(server)) - mine + failed(await scrape(other))).toBe(1);
  });
});
