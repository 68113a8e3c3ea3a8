import type { App } from "../app";
import type { Logger } from "../log";
import { microClock } from "../vocabulary/time";
import { createLocalBackend, type MessagingBackend } from "./backend";
import { loadWorkflows } from "./loader";
import type { RunnerDeps } from "./runner";
import { startScheduler, type Scheduler } from "./scheduler";

/**
 * Local: the same service functions as the API, on the same database. `remote` (TEXTWIRE_URL,
 * chosen by src/main.ts and src/cli.ts): the server's API; cursors, leases and runs stay in the local database.
 */
export function runnerDeps(app: App, log: Logger, remote?: MessagingBackend): RunnerDeps {
  return {
    backend: remote ?? createLocalBackend(app),
    startCursor: remote ? microClock : undefined,
    storage: app.storage,
    log,
    maxMessageLength: app.config.MAX_MESSAGE_LENGTH,
    mentionPatterns: app.config.MENTION_PATTERNS,
    owner: `${process.pid}:${Bun.randomUUIDv7()}`,
    metrics: app.metrics,
  };
}

/** Loads WORKFLOWS_DIR and schedules what loaded; reports each file it skipped. */
export async function startWorker(app: App, log: Logger, remote?: MessagingBackend): Promise<Scheduler | undefined> {
  if (app.config.WORKFLOWS_DIR === "off") return undefined;
  const { workflows, problems } = await loadWorkflows(app.config.WORKFLOWS_DIR);
  for (const p of problems) log.error(`workflow file skipped: ${p.path}: ${p.reason}`, { path: p.path });
  if (remote) log.info(`worker runs against ${app.config.TEXTWIRE_URL}`);
  return startScheduler(runnerDeps(app, log, remote), workflows, log);
}
