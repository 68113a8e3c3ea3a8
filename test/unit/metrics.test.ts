// The metrics module (src/observability/metrics.ts) against real storage on each dialect:
// the queue reads its gauges come from, what a scrape shows, and how labels stay bounded.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import parse from "parse-prometheus-text-format";
import type { Storage } from "../../src/db/port";
import { openSqliteStorage } from "../../src/db/sqlite/storage";
import { createMetrics, recordPurged } from "../../src/observability/metrics";
import { dialects, storages } from "./helpers";

const A = "+14155550123";

/** Stores a message scheduled `inMs` from now (negative: overdue). */
const schedule = (storage: Storage, inMs: number) =>
  storage.messages.insert({ id: Bun.randomUUIDv7(), phone: A, body: "later", direction: "outbound", status: "scheduled", network: "loopback", networkId: null, sendAt: Date.now() + inMs });

/** An inbound message: its event is queued for every enabled endpoint (the migrations' triggers). */
const receive = (storage: Storage) =>
  storage.messages.insert({ id: Bun.randomUUIDv7(), phone: A, body: "hi", direction: "inbound", status: "received", network: "loopback", networkId: null });

describe.each(dialects)("queue sizes on $name", (dialect) => {
  const fresh = storages(dialect);

  test("scheduled messages: how many, and how far behind the most overdue is", async () => {
    const storage = await fresh();
    expect(await storage.messages.scheduledQueue()).toEqual({ pending: 0, overdueMs: 0 });
    await schedule(storage, 60_000);
    expect(await storage.messages.scheduledQueue()).toEqual({ pending: 1, overdueMs: 0 });
    await schedule(storage, -5_000);
    const queue = await storage.messages.scheduledQueue();
    expect(queue.pending).toBe(2);
    expect(queue.overdueMs).toBeGreaterThanOrEqual(5_000);
    expect(queue.overdueMs).toBeLessThan(60_000);
  });

  test("webhook deliveries: pending ones counted; only an enabled endpoint's are behind", async () => {
    const storage = await fresh();
    expect(await storage.webhooks.deliveryQueue()).toEqual({ pending: 0, overdueMs: 0 });
    const endpoint = await storage.webhooks.createEndpoint({ id: "we_1", url: "https://example.com/hook", events: null, description: null, secret: "whsec_1" });
    await receive(storage);
    await receive(storage);
    await dialect.rows(storage, "UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at - 60000 RETURNING id");
    const queue = await storage.webhooks.deliveryQueue();
    expect(queue.pending).toBe(2);
    expect(queue.overdueMs).toBeGreaterThanOrEqual(60_000);
    await storage.webhooks.updateEndpoint(endpoint.id, { enabled: false });
    expect(await storage.webhooks.deliveryQueue()).toEqual({ pending: 2, overdueMs: 0 });
  });

  test("a scrape reads both queues from the database", async () => {
    const storage = await fresh();
    await schedule(storage, -2_000);
    const families = parse(await createMetrics(storage).scrape());
    const value = (name: string) => Number(families.find((f) => f.name === name)?.metrics[0]?.value);
    expect(value("textwire_scheduled_messages_pending")).toBe(1);
    expect(value("textwire_scheduled_messages_overdue_seconds")).toBeGreaterThanOrEqual(2);
    expect(value("textwire_webhook_deliveries_pending")).toBe(0);
    expect(families.some((f) => f.name === "textwire_db_pool_connections")).toBe(dialect.name === "postgres");
  });
});

describe("a scrape", () => {
  const fresh = storages(dialects[0]!);

  test("a method outside the usual ones is labelled other, so clients cannot add label values", async () => {
    const metrics = createMetrics(await fresh());
    metrics.request("GET", "/api/send", 200, 0.01);
    metrics.request("BREW", "unmatched", 405, 0.01);
    metrics.request("GET", "/api/send", 200, 0.02);
    const text = await metrics.scrape();
    expect(text).toContain('textwire_http_requests_total{method="GET",route="/api/send",status="200"} 2');
    expect(text).toContain('textwire_http_requests_total{method="other",route="unmatched",status="405"} 1');
    expect(text).not.toContain("BREW");
    expect(text).toContain('textwire_http_request_duration_seconds_count{method="GET",route="/api/send",status="200"} 2');
  });

  test("rows purged by retention are counted by table", async () => {
    const metrics = createMetrics(await fresh());
    const before = await metrics.scrape();
    const counted = (text: string) => Number(/textwire_retention_purged_rows_total\{table="generations"\} (\d+)/.exec(text)?.[1] ?? 0);
    recordPurged("generations", 120);
    recordPurged("generations", 0);
    recordPurged("generations", 5);
    expect(counted(await metrics.scrape()) - counted(before)).toBe(125);
  });

  test("when the database does not answer, the queue gauges are NaN after 2 s and the rest is still served", async () => {
    // Its own storage: closed here, not after the test.
    const storage = openSqliteStorage(":memory:");
    const metrics = createMetrics(storage);
    metrics.message("outbound", "loopback", "failed");
    await storage.close();
    const text = await metrics.scrape();
    const families = parse(text);
    for (const name of ["textwire_scheduled_messages_pending", "textwire_webhook_deliveries_pending"]) {
      const value = families.find((f) => f.name === name)?.metrics[0]?.value;
      expect({ name, nan: value !== undefined && Number.isNaN(Number(value)) }).toEqual({ name, nan: true });
    }
    expect(text).toContain('textwire_messages_total{direction="outbound",network="loopback",status="failed"} 1');
  });
});

describe("the Grafana dashboard (docs/grafana/textwire-dashboard.json)", () => {
  const fresh = storages(dialects[0]!);

  test("queries only metrics a process exports, through its Prometheus data source variable", async () => {
    const dashboard = JSON.parse(readFileSync(join(import.meta.dir, "../../docs/grafana/textwire-dashboard.json"), "utf8"));
    const names = new Set(parse(await createMetrics(await fresh()).scrape()).map((f) => f.name));
    // Defined once a process has a pool (PostgreSQL).
    for (const pool of ["textwire_db_pool_connections", "textwire_db_pool_idle_connections", "textwire_db_pool_waiting_requests"]) names.add(pool);
    expect(dashboard.templating.list.find((v: { type: string }) => v.type === "datasource")).toMatchObject({ name: "datasource", query: "prometheus" });
    const panels = dashboard.panels.filter((p: { type: string }) => p.type !== "row");
    expect(panels.length).toBeGreaterThan(10);
    expect(new Set(dashboard.panels.map((p: { id: number }) => p.id)).size).toBe(dashboard.panels.length);
    for (const panel of panels) {
      expect({ panel: panel.title, uid: panel.datasource.uid }).toEqual({ panel: panel.title, uid: "${datasource}" });
      for (const { expr } of panel.targets) {
        const used = [...(expr as string).matchAll(/\b((?:textwire|process|nodejs)_\w+?)(?:_bucket)?\{/g)].map((m) => m[1]!);
        expect(used.length).toBeGreaterThan(0);
        for (const name of used) expect({ panel: panel.title, name, exported: names.has(name) }).toEqual({ panel: panel.title, name, exported: true });
      }
    }
  });
});
