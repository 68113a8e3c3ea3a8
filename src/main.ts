import { createHttpHandler } from "./api/http";
import { createApp } from "./app";
import { countActiveKeys, createKey } from "./auth/keys";
import { ConfigError, loadConfig, type Config } from "./config";
import { openDb } from "./db/client";
import { createLogger, errorText } from "./log";

const SHUTDOWN_GRACE_MS = 10_000;
/** A send still `queued` after this was cut off by a crash (drivers give up far sooner). */
const STALE_QUEUED_MS = 2 * 60_000;
const MAINTENANCE_EVERY_MS = 60_000;

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`textwire: ${err.message}\n`);
    process.exit(1);
  }
}

const config = configOrExit();
const log = createLogger(config.LOG_LEVEL);
const db = openDb(config.DATABASE_URL);
const app = createApp(config, db, log);

if (config.API_KEYS.length === 0 && countActiveKeys(db) === 0) {
  const { key } = createKey(db, "default");
  // The only time a key is ever written out: it is stored as a hash.
  process.stdout.write(
    `\nNo API key existed, so one was created (name "default"). It is shown only now; store it safely:\n\n  ${key}\n\n`,
  );
}

function maintain() {
  const failed = app.store.failStaleQueued(STALE_QUEUED_MS);
  if (failed > 0) log.warn("marked interrupted sends as failed", { count: failed });
  const purged = app.idempotency.purgeExpired();
  if (purged > 0) log.info("purged expired idempotency keys", { count: purged });
}
maintain();
const maintenance = setInterval(maintain, MAINTENANCE_EVERY_MS);

const http = createHttpHandler(app);
const server = Bun.serve({
  port: config.PORT,
  hostname: config.HOST,
  // Bodies are limited by the handler (1 MiB, read as a stream), so that every oversized
  // body gets the JSON 413 rather than Bun's empty one.
  maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  fetch: (req, srv) => http.fetch(req, srv.requestIP(req)?.address ?? "unknown"),
  error(err) {
    log.error("unhandled server error", { error: errorText(err) });
    return Response.json(
      { success: false, error: { code: "INTERNAL_SERVER_ERROR", message: "internal error; the request may be retried later" } },
      { status: 500 },
    );
  },
});
log.info(`listening on http://${server.hostname}:${server.port}`, { network: app.network.name });

let stopping = false;
async function shutdown(signal: string) {
  if (stopping) return;
  stopping = true;
  clearInterval(maintenance);
  log.info("shutting down", { signal });
  const timer = setTimeout(() => {
    log.warn("in-flight work did not finish in time; exiting");
    db.$client.close();
    process.exit(0);
  }, SHUTDOWN_GRACE_MS);
  await server.stop(false);
  clearTimeout(timer);
  db.$client.close();
  log.info("stopped");
  process.exit(0);
}
process.on("SIGTERM", () => void shutdown("SIGTERM"));
process.on("SIGINT", () => void shutdown("SIGINT"));
