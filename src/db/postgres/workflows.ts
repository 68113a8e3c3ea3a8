import type { WorkflowRepository, WorkflowRow, WorkflowRunRow } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

const ROW = `name, cursor, failures, backoff_until AS "backoffUntil", coalesce(backoff_until > ${NOW_MS}, false) AS "backingOff",
  lease_owner AS "leaseOwner", lease_until AS "leaseUntil", created_at AS "createdAt"`;
const RUN = `id, workflow, trigger, dry_run AS "dryRun", started_at AS "startedAt", ended_at AS "endedAt", status, error, handled`;

const create = statement(
  "workflows.create",
  `INSERT INTO workflows (name, cursor, failures, created_at) VALUES ($1, $2, 0, ${NOW_MS}) ON CONFLICT DO NOTHING`,
);
const byName = statement<WorkflowRow>("workflows.get", `SELECT ${ROW} FROM workflows WHERE name = $1`);
const lockByName = statement<WorkflowRow>("workflows.lockForUpdate", `SELECT ${ROW} FROM workflows WHERE name = $1 FOR UPDATE`);
const success = statement("workflows.recordSuccess", `UPDATE workflows SET failures = 0, backoff_until = NULL, cursor = $2 WHERE name = $1`);
const failure = statement("workflows.recordFailure", `UPDATE workflows SET failures = $2, backoff_until = ${NOW_MS} + $3 WHERE name = $1`);
// The lease is free, expired by the database's clock, or already this owner's: one conditional UPDATE.
const acquire = statement(
  "workflows.acquireLease",
  `UPDATE workflows SET lease_owner = $2, lease_until = ${NOW_MS} + $3
   WHERE name = $1 AND (lease_until IS NULL OR lease_until < ${NOW_MS} OR lease_owner = $2)`,
);
const renew = statement("workflows.renewLease", `UPDATE workflows SET lease_until = ${NOW_MS} + $3 WHERE name = $1 AND lease_owner = $2`);
const release = statement("workflows.releaseLease", `UPDATE workflows SET lease_owner = NULL, lease_until = NULL WHERE name = $1 AND lease_owner = $2`);
const startRun = statement(
  "workflows.startRun",
  `INSERT INTO workflow_runs (id, workflow, trigger, dry_run, started_at, status, handled) VALUES ($1, $2, $3, $4, ${NOW_MS}, 'running', 0)`,
);
const endRun = statement("workflows.endRun", `UPDATE workflow_runs SET ended_at = ${NOW_MS}, status = $2, error = $3, handled = $4 WHERE id = $1`);
const endInterrupted = statement(
  "workflows.endInterruptedRuns",
  `UPDATE workflow_runs SET status = 'error', ended_at = ${NOW_MS}, error = $2 WHERE workflow = $1 AND status = 'running' AND NOT dry_run`,
);
// A run a `workflow.run_failed` event shows stays as long as the event.
const purgeRuns = statement(
  "workflows.purgeRuns",
  `DELETE FROM workflow_runs WHERE started_at < ${NOW_MS} - $1 AND status <> 'running' AND NOT EXISTS (SELECT 1 FROM events WHERE run_id = workflow_runs.id)`,
);
const recentRuns = statement<WorkflowRunRow>(
  "workflows.recentRuns",
  `SELECT ${RUN} FROM workflow_runs WHERE workflow = $1 ORDER BY started_at DESC, id DESC LIMIT $2`,
);
const getState = statement<{ value: string }>("workflows.getState", `SELECT value FROM workflow_state WHERE workflow = $1 AND key = $2`);
const setState = statement(
  "workflows.setState",
  `INSERT INTO workflow_state (workflow, key, value, updated_at) VALUES ($1, $2, $3, ${NOW_MS})
   ON CONFLICT (workflow, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
);
const deleteState = statement("workflows.deleteState", `DELETE FROM workflow_state WHERE workflow = $1 AND key = $2`);

/** The workflows, workflow_runs and workflow_state tables, timed by the database's clock. */
export function postgresWorkflows(run: Run): WorkflowRepository {
  const changed = (result: { rowCount: number | null }) => result.rowCount === 1;
  return {
    create: async (name, cursor) => void (await run(create, [name, cursor])),
    get: async (name) => (await run(byName, [name])).rows[0],
    lockForUpdate: async (name) => (await run(lockByName, [name])).rows[0],
    recordSuccess: async (name, cursor) => void (await run(success, [name, cursor])),
    recordFailure: async (name, failures, backoffMs) => void (await run(failure, [name, failures, backoffMs])),
    acquireLease: async (name, owner, ms) => changed(await run(acquire, [name, owner, ms])),
    renewLease: async (name, owner, ms) => changed(await run(renew, [name, owner, ms])),
    releaseLease: async (name, owner) => void (await run(release, [name, owner])),
    startRun: async (r) => void (await run(startRun, [r.id, r.workflow, r.trigger, r.dryRun])),
    endRun: async (id, end) => void (await run(endRun, [id, end.status, end.error, end.handled])),
    endInterruptedRuns: async (workflow, error) => (await run(endInterrupted, [workflow, error])).rowCount ?? 0,
    purgeRunsOlderThan: async (ageMs) => (await run(purgeRuns, [ageMs])).rowCount ?? 0,
    recentRuns: async (workflow, limit) => (await run(recentRuns, [workflow, limit])).rows,
    getState: async (workflow, key) => (await run(getState, [workflow, key])).rows[0]?.value,
    setState: async (workflow, key, value) => void (await run(setState, [workflow, key, value])),
    deleteState: async (workflow, key) => void (await run(deleteState, [workflow, key])),
  };
}
