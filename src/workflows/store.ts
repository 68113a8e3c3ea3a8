import type { Storage, WorkflowRepository, WorkflowRow } from "../db/port";
import type { RunStatus } from "../vocabulary/workflows";

/** Backoff after `failures` failed runs in a row: 5 s, 10 s, 20 s … at most 5 minutes. */
export function backoffMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(5 * 60_000, 5_000 * 2 ** (failures - 1));
}

/** Why a run left `running` by a dead process was ended. */
export const INTERRUPTED_RUN = "interrupted: the process stopped during the run";

/**
 * The workflow's row, created on first sight with the cursor at the newest message
 * then stored (or `start`): a new workflow answers what arrives from now on, not the backlog.
 */
export async function ensureWorkflow(storage: Storage, name: string, start?: number): Promise<WorkflowRow> {
  const row = await storage.workflows.get(name);
  if (row) return row;
  return storage.transaction(async (tx) => {
    await tx.workflows.create(name, start ?? (await tx.messages.newestTimestamp()));
    return (await tx.workflows.get(name))!;
  });
}

/**
 * Records a run's end. A real run that succeeded moves the cursor (never backwards) and
 * clears the backoff; one that failed counts a failure and backs off.
 */
export async function finishRun(
  storage: Storage,
  run: { id: string; workflow: string; dryRun: boolean; status: RunStatus; error?: string; handled: number; cursor?: number },
): Promise<void> {
  await storage.transaction(async (tx) => {
    await tx.workflows.endRun(run.id, { status: run.status, error: run.error ?? null, handled: run.handled });
    if (run.dryRun) return;
    const row = await tx.workflows.lockForUpdate(run.workflow);
    if (!row) return;
    if (run.status === "ok") {
      await tx.workflows.recordSuccess(run.workflow, Math.max(row.cursor, run.cursor ?? row.cursor));
    } else {
      const failures = row.failures + 1;
      await tx.workflows.recordFailure(run.workflow, failures, backoffMs(failures));
    }
  });
}

/** A workflow's own value (`ctx.state.get`), stored as JSON. */
export async function getState(workflows: WorkflowRepository, workflow: string, key: string): Promise<unknown> {
  const json = await workflows.getState(workflow, key);
  return json === undefined ? undefined : JSON.parse(json);
}

/** Sets a workflow's own value; one that JSON cannot hold (undefined) deletes it. */
export async function setState(workflows: WorkflowRepository, workflow: string, key: string, value: unknown): Promise<void> {
  const json = JSON.stringify(value);
  if (json === undefined) await workflows.deleteState(workflow, key);
  else await workflows.setState(workflow, key, json);
}
