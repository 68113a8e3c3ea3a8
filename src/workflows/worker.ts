import type { App } from "../app";
import type { Logger } from "../log";
import { createLocalBackend } from "./backend";
import { loadWorkflows } from "./loader";
import type { RunnerDeps } from "./runner";
import { startScheduler, type Scheduler } from "./scheduler";
import { createWorkflowStore } from "./store";

export function runnerDeps(app: App, log: Logger): RunnerDeps {
  return {
    backend: createLocalBackend(app),
    store: createWorkflowStore(app.db),
    log,
    maxMessageLength: app.config.MAX_MESSAGE_LENGTH,
    owner: `${process.pid}:${Bun.randomUUIDv7()}`,
  };
}

/** Loads WORKFLOWS_DIR and schedules what loaded; reports each file it skipped. */
export async function startWorker(app: App, log: Logger): Promise<Scheduler | undefined> {
  if (app.config.WORKFLOWS_DIR === "off") return undefined;
  const { workflows, problems } = await loadWorkflows(app.config.WORKFLOWS_DIR);
  for (const p of problems) log.error(`workflow file skipped: ${p.path}: ${p.reason}`, { path: p.path });
  return startScheduler(runnerDeps(app, log), workflows, log);
}
