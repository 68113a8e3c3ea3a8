import type { Database } from "bun:sqlite";
import type { RunStatus, RunTrigger } from "../../vocabulary/workflows";
import type { WorkflowRepository, WorkflowRow, WorkflowRunRow } from "../port";
import type { Sync } from "./gate";

const ROW = `name, cursor, failures, backoff_until AS backoffUntil, coalesce(backoff_until > $now, 0) AS backingOff,
  lease_owner AS leaseOwner, lease_until AS leaseUntil, created_at AS createdAt`;
const RUN = `id, workflow, trigger, dry_run AS dryRun, started_at AS startedAt, ended_at AS endedAt, status, error, handled`;

type Stored<T, K extends keyof T> = Omit<T, K> & { [P in K]: number };

const workflowRow = (row: Stored<WorkflowRow, "backingOff"> | null) => (row ? { ...row, backingOff: row.backingOff === 1 } : undefined);

/** The workflows, workflow_runs and workflow_state tables. `now` counts milliseconds. */
export function sqliteWorkflows(sqlite: Database, now: () => number): Sync<WorkflowRepository> {
  const create = sqlite.prepare<never, [{ name: string; cursor: number; now: number }]>(
    `INSERT INTO workflows (name, cursor, failures, created_at) VALUES ($name, $cursor, 0, $now) ON CONFLICT DO NOTHING`,
  );
  const byName = sqlite.prepare<Stored<WorkflowRow, "backingOff">, [{ name: string; now: number }]>(`SELECT ${ROW} FROM workflows WHERE name = $name`);
  const success = sqlite.prepare<never, [{ name: string; cursor: number }]>(
    `UPDATE workflows SET failures = 0, backoff_until = NULL, cursor = $cursor WHERE name = $name`,
  );
  const failure = sqlite.prepare<never, [{ name: string; failures: number; until: number }]>(
    `UPDATE workflows SET failures = $failures, backoff_until = $until WHERE name = $name`,
  );
  const acquire = sqlite.prepare<never, [{ name: string; owner: string; until: number; now: number }]>(
    `UPDATE workflows SET lease_owner = $owner, lease_until = $until
     WHERE name = $name AND (lease_until IS NULL OR lease_until < $now OR lease_owner = $owner)`,
  );
  const renew = sqlite.prepare<never, [{ name: string; owner: string; until: number }]>(
    `UPDATE workflows SET lease_until = $until WHERE name = $name AND lease_owner = $owner`,
  );
  const release = sqlite.prepare<never, [{ name: string; owner: string }]>(
    `UPDATE workflows SET lease_owner = NULL, lease_until = NULL WHERE name = $name AND lease_owner = $owner`,
  );
  const startRun = sqlite.prepare<never, [{ id: string; workflow: string; trigger: RunTrigger; dryRun: number; now: number }]>(
    `INSERT INTO workflow_runs (id, workflow, trigger, dry_run, started_at, status, handled) VALUES ($id, $workflow, $trigger, $dryRun, $now, 'running', 0)`,
  );
  const endRun = sqlite.prepare<never, [{ id: string; status: RunStatus; error: string | null; handled: number; now: number }]>(
    `UPDATE workflow_runs SET ended_at = $now, status = $status, error = $error, handled = $handled WHERE id = $id`,
  );
  const endInterrupted = sqlite.prepare<never, [{ workflow: string; error: string; now: number }]>(
    `UPDATE workflow_runs SET status = 'error', ended_at = $now, error = $error WHERE workflow = $workflow AND status = 'running' AND dry_run = 0`,
  );
  // A run a `workflow.run_failed` event shows stays as long as the event.
  const purgeRuns = sqlite.prepare<never, [{ before: number }]>(
    `DELETE FROM workflow_runs WHERE started_at < $before AND status <> 'running' AND NOT EXISTS (SELECT 1 FROM events WHERE run_id = workflow_runs.id)`,
  );
  const recentRuns = sqlite.prepare<Stored<WorkflowRunRow, "dryRun">, [{ workflow: string; limit: number }]>(
    `SELECT ${RUN} FROM workflow_runs WHERE workflow = $workflow ORDER BY started_at DESC, id DESC LIMIT $limit`,
  );
  const getState = sqlite.prepare<{ value: string }, [{ workflow: string; key: string }]>(
    `SELECT value FROM workflow_state WHERE workflow = $workflow AND key = $key`,
  );
  const setState = sqlite.prepare<never, [{ workflow: string; key: string; value: string; now: number }]>(
    `INSERT INTO workflow_state (workflow, key, value, updated_at) VALUES ($workflow, $key, $value, $now)
     ON CONFLICT (workflow, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
  );
  const deleteState = sqlite.prepare<never, [{ workflow: string; key: string }]>(`DELETE FROM workflow_state WHERE workflow = $workflow AND key = $key`);

  const get = (name: string) => workflowRow(byName.get({ name, now: now() }));

  return {
    create: (name, cursor) => void create.run({ name, cursor, now: now() }),
    get,
    // SQLite's write transaction already holds every row.
    lockForUpdate: get,
    recordSuccess: (name, cursor) => void success.run({ name, cursor }),
    recordFailure: (name, failures, backoffMs) => void failure.run({ name, failures, until: now() + backoffMs }),
    acquireLease(name, owner, ms) {
      const t = now();
      return acquire.run({ name, owner, until: t + ms, now: t }).changes === 1;
    },
    renewLease: (name, owner, ms) => renew.run({ name, owner, until: now() + ms }).changes === 1,
    releaseLease: (name, owner) => void release.run({ name, owner }),
    startRun: (run) => void startRun.run({ ...run, dryRun: run.dryRun ? 1 : 0, now: now() }),
    endRun: (id, end) => void endRun.run({ id, ...end, now: now() }),
    endInterruptedRuns: (workflow, error) => endInterrupted.run({ workflow, error, now: now() }).changes,
    purgeRunsOlderThan: (ageMs) => purgeRuns.run({ before: now() - ageMs }).changes,
    recentRuns: (workflow, limit) => recentRuns.all({ workflow, limit }).map((row) => ({ ...row, dryRun: row.dryRun === 1 })),
    getState: (workflow, key) => getState.get({ workflow, key })?.value,
    setState: (workflow, key, value) => void setState.run({ workflow, key, value, now: now() }),
    deleteState: (workflow, key) => void deleteState.run({ workflow, key }),
  };
}
