import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { Storage } from "../db/port";
import type { Recorder } from "./recorder";

/**
 * Rows deleted by retention, by table. Kept apart from any registry so that the purge can
 * count with a plain call (recordPurged); createMetrics registers it.
 */
const purgedRows = new Counter({
  name: "textwire_retention_purged_rows_total",
  help: "Rows deleted by retention in this process, by table.",
  labelNames: ["table"] as const,
  registers: [],
});

/** Counts rows a retention purge deleted from `table`. */
export function recordPurged(table: string, rows: number): void {
  if (rows > 0) purgedRows.inc({ table }, rows);
}

/** Every metric of a process, and the scrape of GET /metrics. */
export interface Metrics extends Recorder {
  /** One HTTP request answered; `route` is its routing table row's template (src/api/http.ts), never a raw path. */
  request(method: string, route: string, status: number, seconds: number): void;
  /** The scrape's Content-Type (Prometheus text format). */
  readonly contentType: string;
  /** The text of GET /metrics, queue gauges read from the database now. */
  scrape(): Promise<string>;
}

/** The methods a request is labelled with; any other is `other`, so a client cannot grow the label set. */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** How long a scrape waits for the queue reads: well within Prometheus' default scrape timeout (10 s). */
const QUEUE_READ_MS = 2_000;
const GENERATION_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60];

/**
 * The registry of one process and its metrics (docs/operations.md lists them). Counters and
 * histograms count what this process did; the queue gauges are read from the database at
 * each scrape, so every process sharing it reports the same queue; on PostgreSQL the pool's
 * sizes are this process's.
 */
export function createMetrics(storage: Pick<Storage, "messages" | "webhooks" | "connections">): Metrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  registry.registerMetric(purgedRows);

  const httpLabels = ["method", "route", "status"] as const;
  const requests = new Counter({ name: "textwire_http_requests_total", help: "HTTP requests answered, by method, route template and status.", labelNames: httpLabels, registers });
  const requestSeconds = new Histogram({
    name: "textwire_http_request_duration_seconds",
    help: "Time to answer an HTTP request, by method, route template and status.",
    labelNames: httpLabels,
    buckets: HTTP_BUCKETS,
    registers,
  });
  const messages = new Counter({
    name: "textwire_messages_total",
    help: "Messages that reached a status in this process, by direction, network and status.",
    labelNames: ["direction", "network", "status"] as const,
    registers,
  });
  const attempts = new Counter({
    name: "textwire_webhook_deliveries_total",
    help: "Webhook delivery attempts, by the state they left the delivery in (pending: to be retried).",
    labelNames: ["state"] as const,
    registers,
  });
  const runs = new Counter({ name: "textwire_workflow_runs_total", help: "Workflow runs ended, by workflow and result.", labelNames: ["workflow", "result"] as const, registers });
  const runSeconds = new Histogram({
    name: "textwire_workflow_run_duration_seconds",
    help: "Workflow run durations, by workflow and result.",
    labelNames: ["workflow", "result"] as const,
    buckets: RUN_BUCKETS,
    registers,
  });
  const generations = new Counter({ name: "textwire_generator_requests_total", help: "Generations, by result.", labelNames: ["result"] as const, registers });
  const generationSeconds = new Histogram({
    name: "textwire_generator_request_duration_seconds",
    help: "Generation durations, by result.",
    labelNames: ["result"] as const,
    buckets: GENERATION_BUCKETS,
    registers,
  });

  const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
  const scheduledPending = gauge("textwire_scheduled_messages_pending", "Messages scheduled and not sent yet (database-wide).");
  const scheduledOverdue = gauge("textwire_scheduled_messages_overdue_seconds", "How long the most overdue scheduled message has waited past its send_at (database-wide; 0 when none is due).");
  const deliveriesPending = gauge("textwire_webhook_deliveries_pending", "Webhook deliveries pending (database-wide).");
  const deliveriesOverdue = gauge(
    "textwire_webhook_deliveries_overdue_seconds",
    "How long the most overdue pending delivery of an enabled endpoint has waited past its next attempt (database-wide; 0 when none is due).",
  );
  const pool = storage.connections
    ? {
        total: gauge("textwire_db_pool_connections", "PostgreSQL connections this process's pool holds open."),
        idle: gauge("textwire_db_pool_idle_connections", "Idle connections in this process's pool."),
        waiting: gauge("textwire_db_pool_waiting_requests", "Queries of this process waiting for a pooled connection."),
      }
    : undefined;

  /** The queues from the database, once per scrape; NaN when it does not answer within QUEUE_READ_MS (the rest of the scrape still does). */
  async function readQueues() {
    let timer: Timer | undefined;
    const late = new Promise<undefined[]>((done) => (timer = setTimeout(() => done([undefined, undefined]), QUEUE_READ_MS)));
    const read = Promise.all([storage.messages.scheduledQueue(), storage.webhooks.deliveryQueue()]).catch(() => [undefined, undefined]);
    const [scheduled, deliveries] = await Promise.race([read, late]).finally(() => clearTimeout(timer));
    scheduledPending.set(scheduled?.pending ?? NaN);
    scheduledOverdue.set(scheduled ? scheduled.overdueMs / 1000 : NaN);
    deliveriesPending.set(deliveries?.pending ?? NaN);
    deliveriesOverdue.set(deliveries ? deliveries.overdueMs / 1000 : NaN);
    if (pool && storage.connections) {
      const now = storage.connections();
      pool.total.set(now.total);
      pool.idle.set(now.idle);
      pool.waiting.set(now.waiting);
    }
  }

  // Each label set's children are looked up once: a request then costs two increments.
  const perRequest = new Map<string, { count: Counter.Internal; seconds: Histogram.Internal<string> }>();

  return {
    contentType: registry.contentType,
    async scrape() {
      await readQueues();
      return registry.metrics();
    },
    request(method, route, status, seconds) {
      const m = METHODS.has(method) ? method : "other";
      const key = `${m} ${status} ${route}`;
      let children = perRequest.get(key);
      if (!children) {
        const labels = { method: m, route, status: String(status) };
        children = { count: requests.labels(labels), seconds: requestSeconds.labels(labels) };
        perRequest.set(key, children);
      }
      children.count.inc();
      children.seconds.observe(seconds);
    },
    message: (direction, network, status) => messages.inc({ direction, network, status }),
    webhookAttempt: (state) => attempts.inc({ state }),
    workflowRun(workflow, result, seconds) {
      runs.inc({ workflow, result });
      runSeconds.observe({ workflow, result }, seconds);
    },
    generation(result, seconds) {
      generations.inc({ result });
      generationSeconds.observe({ result }, seconds);
    },
  };
}
