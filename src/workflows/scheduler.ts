import { Cron } from "croner";
import { errorText, type Logger } from "../log";
import type { Workflow } from "./define";
import { runWorkflow, type RunnerDeps } from "./runner";
import { ensureWorkflow } from "./store";

export interface Scheduler {
  /** The workflows scheduled (those whose requirements are met). */
  readonly scheduled: string[];
  /** Stops scheduling, waits for running runs up to `graceMs`, then aborts them. */
  stop(graceMs: number): Promise<void>;
}

/** Whether a workflow can run here; otherwise why not. */
export function unmetRequirement(wf: Workflow, hasGenerator: boolean): string | null {
  if (wf.requires?.includes("generator") && !hasGenerator) {
    return "requires the generator, which is not configured (set OPENAI_API_KEY)";
  }
  return null;
}

/**
 * Runs each workflow on its croner schedule. croner's `protect` keeps runs of one workflow
 * from overlapping in this process; the lease keeps them apart across processes. Ticks
 * during a backoff are skipped; ticks missed while stopped are not replayed.
 */
export async function startScheduler(deps: RunnerDeps, workflows: Workflow[], log: Logger): Promise<Scheduler> {
  const stop = new AbortController();
  const running = new Set<Promise<unknown>>();
  const jobs: Cron[] = [];

  for (const wf of workflows) {
    const unmet = unmetRequirement(wf, deps.backend.hasGenerator);
    if (unmet) {
      log.warn(`workflow ${wf.name} ${unmet}; not scheduled`, { workflow: wf.name });
      continue;
    }
    try {
      await ensureWorkflow(deps.storage, wf.name, deps.startCursor?.());
    } catch (err) {
      // Each run ensures the row again; a busy database now only delays it.
      log.warn(`workflow ${wf.name}: could not prepare its row; its first run will`, { workflow: wf.name, error: errorText(err) });
    }
    const job = new Cron(
      wf.schedule,
      {
        name: wf.name,
        timezone: wf.timezone ?? "UTC",
        protect: true,
        catch: (err) => log.error("workflow tick failed", { workflow: wf.name, error: errorText(err) }),
      },
      async () => {
        if (stop.signal.aborted) return;
        const row = await deps.storage.workflows.get(wf.name);
        if (row?.backingOff) {
          log.debug("workflow tick skipped: backing off", { workflow: wf.name, until: new Date(row.backoffUntil ?? 0).toISOString() });
          return;
        }
        const run = runWorkflow(deps, wf, { trigger: "schedule", stop: stop.signal });
        running.add(run);
        try {
          await run;
        } finally {
          running.delete(run);
        }
      },
    );
    jobs.push(job);
    log.info(`workflow ${wf.name} scheduled`, { workflow: wf.name, schedule: wf.schedule, nextRun: job.nextRun()?.toISOString() });
  }

  return {
    scheduled: jobs.map((j) => j.name ?? ""),
    async stop(graceMs) {
      for (const job of jobs) job.stop();
      const settled = Promise.allSettled([...running]);
      const late = setTimeout(() => stop.abort("the process is shutting down"), graceMs);
      await settled;
      clearTimeout(late);
      stop.abort("stopped");
    },
  };
}
