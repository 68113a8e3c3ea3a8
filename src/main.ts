import { createHttpHandler, createOperationsHandler } from "./api/http";
import { createApp, type App } from "./app";
import { repeatEvery, type Repeating } from "./background";
import { countActiveKeys, createKey } from "./auth/keys";
import { ConfigError, loadConfig, type Config } from "./config";
import { DatabaseError, openStorage, type Storage } from "./db";
import { AppError } from "./errors";
import { createLogger, errorText, type Logger } from "./log";
import { IDEMPOTENCY_TTL_MS } from "./messages/idempotency";
import { catchUpLine, reconcileLine } from "./messages/network-events";
import { canDo } from "./messages/network-actions";
import { LINES_REFRESH_MS } from "./lines/registry";
import { SecretKeyError } from "./secrets/seal";
import { startScheduledSender, type ScheduledSender } from "./messages/scheduled";
import { enableTracing, flushTracing } from "./observability/trace";
import { purgePastRetention, type OnPurged } from "./retention";
import { stopExpiredTyping } from "./messages/typing";
import { returnExpiredHandoffs } from "./messages/modes";
import { startDeliverer, type Deliverer } from "./webhooks/deliverer";
import type { Scheduler } from "./workflows/scheduler";
import { configuredRemoteBackend } from "./workflows/remote-backend";
import { startWorker } from "./workflows/worker";

const SHUTDOWN_GRACE_MS = 10_000;
/** A send still `queued` after this was cut off by a crash (drivers give up far sooner). */
const STALE_QUEUED_MS = 2 * 60_000;
const STALE_QUEUED_ERROR = "interrupted: the process stopped before the network confirmed the send";
/** The lease of the process that runs maintenance, when several share the database. */
const MAINTENANCE_LEASE = "maintenance";
/** How often to ask a network for what its webhooks missed (BlueBubbles does not retry them). */
const CATCH_UP_EVERY_MS = 3 * 60_000;
/**
 * How often our typing indicators past their 60 s are stopped: on its own loop, as the
 * maintenance round (MAINTENANCE_INTERVAL_MS, a minute) would let one last two. Each is
 * cleared by one process (a conditional UPDATE), which tells the network.
 */
const TYPING_SWEEP_MS = 5_000;
/** How often human chats whose time is up are handed back: the return lands within 10 s of its time. */
const HANDOFF_SWEEP_MS = 5_000;
const MODES = ["all", "api", "worker"] as const;
type Mode = (typeof MODES)[number];

function fail(message: string): never {
  process.stderr.write(`textwire: ${message}\n`);
  process.exit(1);
}

function modeOf(arg: string | undefined): Mode {
  const mode = arg ?? "all";
  if (!(MODES as readonly string[]).includes(mode)) fail(`unknown mode "${mode}"; use all, api or worker`);
  return mode as Mode;
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
}

async function storageOrExit(config: Config): Promise<Storage> {
  try {
    return await openStorage(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  } catch (err) {
    if (err instanceof DatabaseError) fail(err.message);
    throw err;
  }
}

/** Creates a key when none exists at all, and prints it: the only time a key is written out. */
async function ensureSomeKey(app: App) {
  if (app.config.API_KEYS.length > 0 || (await countActiveKeys(app.storage.apiKeys)) > 0) return;
  let key: string;
  try {
    ({ key } = await createKey(app.storage, { name: "default" }));
  } catch (err) {
    // Processes started together on a new database: one of them created it and printed it.
    if (err instanceof AppError && err.code === "CONFLICT") return;
    throw err;
  }
  // Standard error, apart from the JSON log lines on standard output: the key never enters the log stream.
  process.stderr.write(`\nNo API key existed, so one was created (name "default"). It is shown only now; store it safely:\n\n  ${key}\n\n`);
}

/** The app over the open storage; a SECRET_KEY that cannot open the stored secrets stops the start with one line. */
async function appOrExit(): Promise<App> {
  try {
    return await createApp(config, storage, log, metricsModule?.createMetrics(storage));
  } catch (err) {
    if (err instanceof SecretKeyError) fail(err.message);
    throw err;
  }
}

/**
 * The database's housekeeping, done by one process at a time: the one holding the
 * maintenance lease, renewed every round (it outlives one late round). Every process
 * does the first round at start, even while a lease of a crashed process runs out: that
 * crash may have left sends queued. Each step is safe to run twice; retention deletes in
 * small batches (src/retention.ts), each reported to `onPurged`.
 */
function startMaintenance(app: App, log: Logger, owner: string, onPurged: OnPurged) {
  const { storage } = app;
  const everyMs = app.config.MAINTENANCE_INTERVAL_MS;
  const stopping = new AbortController();
  let started = false;
  const repeating = repeatEvery("maintenance", everyMs, async () => {
    const leader = await storage.leases.acquire(MAINTENANCE_LEASE, owner, 3 * everyMs);
    if (!leader && started) return;
    // A line whose network reconciles settles its own queued sends (their outcome may be unknown).
    const reconciling = app.lines.all().filter((l) => l.driver.reconcile).map((l) => l.row.id);
    const failed = await storage.messages.failStaleQueued(STALE_QUEUED_MS, STALE_QUEUED_ERROR, reconciling);
    for (const network of failed) app.metrics?.message("outbound", network, "failed");
    if (failed.length > 0) log.warn("marked interrupted sends as failed", { count: failed.length });
    const purged = await purgePastRetention({ storage, media: app.media.store, log, onPurged, signal: stopping.signal }, app.config, IDEMPOTENCY_TTL_MS);
    if (Object.keys(purged).length > 0) log.info("deleted rows past retention", purged);
    started = true;
  }, log);
  return {
    /** Stops and lets the lease go, so another process takes over at once. */
    async stop() {
      repeating.stop();
      stopping.abort();
      // When the database does not answer, the lease expires on its own.
      await storage.leases.release(MAINTENANCE_LEASE, owner).catch(() => {});
    },
  };
}

/** Asks each line's network for what its webhooks missed, while the line is enabled (BlueBubbles does not retry them). */
function startCatchUp(app: App, log: Logger) {
  return repeatEvery("network catch-up", CATCH_UP_EVERY_MS, async () => {
    for (const line of app.lines.all()) {
      if (!line.row.enabled || !line.driver.catchUp) continue;
      const r = await catchUpLine(app, line);
      if (r && (r.stored > 0 || r.applied > 0)) log.info("caught up with the network", { line: line.row.name, network: line.row.network, ...r });
    }
  }, log);
}

/** Stops our typing indicators past their time (src/messages/typing.ts); an idle round is one read. */
function startTypingSweep(app: App, log: Logger) {
  return repeatEvery("typing sweep", TYPING_SWEEP_MS, async () => {
    if (!app.lines.all().some((l) => canDo(l.driver, "typing"))) return;
    const stopped = await stopExpiredTyping(app);
    if (stopped > 0) log.info("stopped our typing indicators past their time", { count: stopped });
  }, log);
}

/** Returns human chats to their previous mode once HANDOFF_MINUTES passed (src/messages/modes.ts); each chat by one process. */
function startHandoffSweep(app: App, log: Logger) {
  return repeatEvery("handoff sweep", HANDOFF_SWEEP_MS, async () => {
    const returned = await returnExpiredHandoffs(app.storage);
    if (returned > 0) log.info("handed chats back after HANDOFF_MINUTES", { count: returned });
  }, log);
}

/** Asks each line's network about outbound messages not final after a while (BlueBubbles). */
function startReconcile(app: App, log: Logger) {
  const afterMs = app.config.BLUEBUBBLES_RECONCILE_AFTER_MS;
  return repeatEvery("network reconciliation", Math.min(app.config.MAINTENANCE_INTERVAL_MS, Math.max(1000, afterMs / 2)), async () => {
    for (const line of app.lines.all()) {
      if (!line.driver.reconcile) continue;
      const r = await reconcileLine(app, line, afterMs);
      if (r && r.applied > 0) log.info("reconciled message statuses with the network", { line: line.row.name, network: line.row.network, ...r });
    }
  }, log);
}

/** Reads the lines again when another process changed one: a change reaches every process within 5 s. */
function startLinesRefresh(app: App, log: Logger) {
  return repeatEvery("lines refresh", LINES_REFRESH_MS, async () => {
    if (await app.lines.refresh()) log.info("lines changed; drivers rebuilt", { lines: app.lines.all().map((l) => l.row.name) });
  }, log);
}

/** A listener's answer to an error its handler let through. */
const unhandled = (log: Logger) => (err: Error) => {
  log.error("unhandled server error", { error: errorText(err) });
  return Response.json(
    { success: false, error: { code: "INTERNAL_SERVER_ERROR", message: "internal error; the request may be retried later" } },
    { status: 500 },
  );
};

/**
 * Bun.serve, or one line naming the variable when its port cannot be had (another process
 * listens there, or this user may not listen on it), as every other start failure.
 */
function listenOrExit<T>(variable: "PORT" | "WORKER_PORT", options: Bun.Serve.Options<T>): Bun.Server<T> {
  try {
    return Bun.serve(options);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const where = `${(options as { hostname?: string }).hostname}:${(options as { port?: number }).port}`;
    if (code === "EADDRINUSE") fail(`${variable}: ${where} is in use by another process; stop it or set another ${variable}`);
    if (code === "EACCES") fail(`${variable}: not allowed to listen on ${where}; choose a port above 1023 or another ${variable}`);
    throw err;
  }
}

function startHttp(app: App, log: Logger) {
  const http = createHttpHandler(app, { stopping: () => stopping });
  const slowRequestS = Math.ceil((app.config.BLUEBUBBLES_SEND_TIMEOUT_MS + app.config.GENERATOR_TIMEOUT_MS) / 1000) + 30;
  const server = listenOrExit("PORT", {
    port: app.config.PORT,
    hostname: app.config.HOST,
    // Bodies are limited by the handler (1 MiB, read as a stream), so that every oversized
    // body gets the JSON 413 rather than Bun's empty one.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Likewise request heads over 16 KiB get the handler's JSON 431: `bun run start` sets
    // Bun's own header limit (--max-http-header-size, package.json) above that.
    fetch: (req, srv) => {
      // A send may wait for the network longer than Bun's 10 s idle timeout.
      if (req.method === "POST") srv.timeout(req, slowRequestS);
      return http.fetch(req, srv.requestIP(req)?.address ?? "unknown");
    },
    error: unhandled(log),
  });
  const line = app.lines.default();
  log.always(`listening on http://${server.hostname}:${server.port}`, { network: line.row.network, lines: app.lines.all().length });
  return server;
}

/** A worker's listener on WORKER_PORT: health, readiness and metrics only (src/api/operations.ts). */
function startOperationsHttp(app: App, log: Logger, port: number) {
  const http = createOperationsHandler(app, { stopping: () => stopping });
  const server = listenOrExit("WORKER_PORT", {
    port,
    hostname: app.config.HOST,
    fetch: (req, srv) => http.fetch(req, srv.requestIP(req)?.address ?? "unknown"),
    error: unhandled(log),
  });
  log.always(`listening on http://${server.hostname}:${server.port}`, { serves: "health and metrics only" });
  return server;
}

const mode = modeOf(process.argv[2]);
const config = configOrExit();
const log = createLogger(config.LOG_LEVEL);
if (config.OTEL_EXPORTER_OTLP_ENDPOINT) {
  // Imported only here: with the variable unset, no OpenTelemetry module is ever loaded.
  const { startOpenTelemetry } = await import("./observability/otel");
  enableTracing(startOpenTelemetry());
  log.info("exporting traces over OTLP/HTTP", { endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
}
const storage = await storageOrExit(config);
/** A worker's listener for health and metrics: only in worker mode, only with WORKER_PORT. */
const operationsPort = mode === "worker" ? config.WORKER_PORT : undefined;
// Kept only where they can be read: with a token, in a process that serves HTTP (a worker only
// with WORKER_PORT). Imported only then: prom-client loads @opentelemetry/api, which nothing
// else may load without tracing.
const servesHttp = mode !== "worker" || operationsPort !== undefined;
const metricsModule = config.METRICS_TOKEN && servesHttp ? await import("./observability/metrics") : undefined;
const app = await appOrExit();
/** This process, as owner of leases. */
const owner = `${process.pid}:${Bun.randomUUIDv7()}`;

let stopping = false;
let maintenance: ReturnType<typeof startMaintenance> | undefined;
let catchUp: Repeating | undefined;
let reconcile: Repeating | undefined;
let typingSweep: Repeating | undefined;
let handoffSweep: Repeating | undefined;
let linesRefresh: Repeating | undefined;
let server: ReturnType<typeof startHttp> | undefined;
let operationsServer: ReturnType<typeof startOperationsHttp> | undefined;
let worker: Promise<Scheduler | undefined> | undefined;
let deliverer: Deliverer | undefined;
let scheduledSender: ScheduledSender | undefined;
/** Ends the drain early: a SIGINT during a SIGTERM's drain. */
let endDrain: (() => void) | undefined;

/**
 * SIGTERM (an orchestrator's stop) drains first: /health/ready answers 503 at once while the
 * listener keeps serving for SHUTDOWN_DRAIN_MS, so load balancers stop sending before it
 * closes. SIGINT (Ctrl-C) stops without a drain, and ends one under way. A worker has nothing
 * to drain: its listener (WORKER_PORT) answers ready 503 at once, until its runs are done.
 */
async function shutdown(signal: "SIGTERM" | "SIGINT") {
  if (stopping) {
    if (signal === "SIGINT") endDrain?.();
    return;
  }
  stopping = true;
  const drainMs = signal === "SIGTERM" && server ? config.SHUTDOWN_DRAIN_MS : 0;
  if (drainMs > 0) {
    log.info("draining: /health/ready answers 503, requests are still served", { signal, ms: drainMs });
    await new Promise<void>((done) => {
      const timer = setTimeout(done, drainMs);
      endDrain = () => {
        clearTimeout(timer);
        done();
      };
    });
  }
  const released = maintenance?.stop();
  catchUp?.stop();
  reconcile?.stop();
  typingSweep?.stop();
  handoffSweep?.stop();
  linesRefresh?.stop();
  log.info("shutting down", { signal });
  const forced = setTimeout(() => {
    log.warn("in-flight work did not finish in time; exiting");
    process.exit(0);
  }, SHUTDOWN_GRACE_MS + 1000);
  await Promise.all([released, server?.stop(false), worker?.then((w) => w?.stop(SHUTDOWN_GRACE_MS)), deliverer?.stop(SHUTDOWN_GRACE_MS), scheduledSender?.stop(SHUTDOWN_GRACE_MS)]);
  // A worker's listener answers ready 503 until its in-flight work is done, then closes.
  await operationsServer?.stop(false);
  clearTimeout(forced);
  await flushTracing();
  await storage.close();
  log.info("stopped");
  process.exit(0);
}
// Before anything starts, so a signal at any moment is a clean stop.
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));

linesRefresh = startLinesRefresh(app, log);
maintenance = startMaintenance(app, log, owner, (table, rows) => {
  metricsModule?.recordPurged(table, rows);
  log.debug("purged rows past retention", { table, rows });
});
if (mode !== "worker") {
  catchUp = startCatchUp(app, log);
  reconcile = startReconcile(app, log);
  typingSweep = startTypingSweep(app, log);
  handoffSweep = startHandoffSweep(app, log);
  await ensureSomeKey(app);
  server = startHttp(app, log);
  if (config.TEXTWIRE_URL) log.warn("TEXTWIRE_URL is used only by `bun run start worker`; ignored");
  if (config.WORKER_PORT !== undefined) log.warn("WORKER_PORT is used only by `bun run start worker`; ignored (health and metrics are on PORT)");
  if (config.NETWORK === "bluebubbles" && config.BLUEBUBBLES_SEND_TIMEOUT_MS < 120_000) {
    log.warn("BLUEBUBBLES_SEND_TIMEOUT_MS is below the BlueBubbles server's own 2-minute wait: slow sends will be answered 504 and settled later");
  }
}
if (operationsPort !== undefined) operationsServer = startOperationsHttp(app, log, operationsPort);
if (mode !== "api") {
  const remote = mode === "worker" ? configuredRemoteBackend(config) : undefined;
  worker = startWorker(app, log, remote);
  // A remote worker's database is not the server's: the server's own processes deliver
  // webhooks and send scheduled messages.
  if (!remote) {
    deliverer = startDeliverer({ storage, config, log, owner, metrics: app.metrics, secrets: app.secrets });
    log.info("delivering outbound webhooks", { owner });
    scheduledSender = startScheduledSender(app);
    log.info("sending scheduled messages");
  }
}
