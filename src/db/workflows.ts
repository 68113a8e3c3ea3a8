import type { RunStatus, RunTrigger } from "../vocabulary/workflows";
import { changed, count, declare, get, all, run, sql } from "./sql";

export interface WorkflowRow {
  name: string;
  /** Timestamp (µs, as a message's) of the last inbound message a successful run polled. */
  cursor: number;
  /** Failed runs in a row. */
  failures: number;
  /** No scheduled run before this. */
  backoffUntil: number | null;
  /** `backoffUntil` is still ahead, when read. */
  backingOff: boolean;
  leaseOwner: string | null;
  leaseUntil: number | null;
  createdAt: number;
}

export interface WorkflowRunRow {
  id: string;
  workflow: string;
  trigger: RunTrigger;
  dryRun: boolean;
  startedAt: number;
  endedAt: number | null;
  status: RunStatus | "running";
  error: string | null;
  /** Inbound messages the run polled. */
  handled: number;
}

/** A workflow's rows: cursor, backoff, lease, runs and its own state (`ctx.state`). */
export interface WorkflowRepository {
  /** One statement (INSERT … ON CONFLICT DO NOTHING): the workflow's row with this cursor, unless it exists. */
  create(name: string, cursor: number): Promise<void>;
  get(name: string): Promise<WorkflowRow | undefined>;
  /** The row, locked until the transaction ends (PostgreSQL: FOR UPDATE). Call inside `transaction`. */
  lockForUpdate(name: string): Promise<WorkflowRow | undefined>;
  /** A successful run: the cursor as given, no failures, no backoff. */
  recordSuccess(name: string, cursor: number): Promise<void>;
  /** A failed run: `failures` as given, no scheduled run for `backoffMs`. */
  recordFailure(name: string, failures: number, backoffMs: number): Promise<void>;
  /** One statement: takes the lease for `ms` when it is free, expired or already `owner`'s; false when another holds it. */
  acquireLease(name: string, owner: string, ms: number): Promise<boolean>;
  /** One statement: extends `owner`'s lease to `ms` from now; false when it was lost to another owner. */
  renewLease(name: string, owner: string, ms: number): Promise<boolean>;
  /** One statement: lets the lease go if `owner` holds it. */
  releaseLease(name: string, owner: string): Promise<void>;
  /** Records a run that starts now (`running`). */
  startRun(run: { id: string; workflow: string; trigger: RunTrigger; dryRun: boolean }): Promise<void>;
  /** Records a run's end, now. */
  endRun(id: string, end: { status: RunStatus; error: string | null; handled: number }): Promise<void>;
  /** One statement: ends the real (not dry) runs a dead process left `running`, as errors with `error`; returns how many. */
  endInterruptedRuns(workflow: string, error: string): Promise<number>;
  /** The runs that started last, newest first. */
  recentRuns(workflow: string, limit: number): Promise<WorkflowRunRow[]>;
  /** A state value (JSON text). */
  getState(workflow: string, key: string): Promise<string | undefined>;
  /** One statement (upsert). */
  setState(workflow: string, key: string, json: string): Promise<void>;
  deleteState(workflow: string, key: string): Promise<void>;
}

const ROW = `name, cursor, failures, backoff_until AS "backoffUntil", coalesce(backoff_until > {now_ms}, false) AS "backingOff",
  lease_owner AS "leaseOwner", lease_until AS "leaseUntil", created_at AS "createdAt"`;
const RUN = `id, workflow, trigger, dry_run AS "dryRun", started_at AS "startedAt", ended_at AS "endedAt", status, error, handled`;

type Stored<T, K extends keyof T> = Omit<T, K> & { [P in K]: boolean | number };
const workflow = (row: Stored<WorkflowRow, "backingOff"> | undefined) => row && { ...row, backingOff: Boolean(row.backingOff) };

const create = sql("workflows.create", `INSERT INTO workflows (name, cursor, failures, created_at) VALUES ($name, $cursor, 0, {now_ms}) ON CONFLICT DO NOTHING`);
const byName = sql<Stored<WorkflowRow, "backingOff">>("workflows.get", `SELECT ${ROW} FROM workflows WHERE name = $name`);
const lockByName = sql<Stored<WorkflowRow, "backingOff">>("workflows.lockForUpdate", `SELECT ${ROW} FROM workflows WHERE name = $name {for_update}`);
const success = sql("workflows.recordSuccess", `UPDATE workflows SET failures = 0, backoff_until = NULL, cursor = $cursor WHERE name = $name`);
const failure = sql("workflows.recordFailure", `UPDATE workflows SET failures = $failures, backoff_until = {now_ms} + $backoffMs WHERE name = $name`);
// The lease is free, expired, or already this owner's: one conditional UPDATE.
const acquire = sql("workflows.acquireLease", `UPDATE workflows SET lease_owner = $owner, lease_until = {now_ms} + $ms
   WHERE name = $name AND (lease_until IS NULL OR lease_until < {now_ms} OR lease_owner = $owner)`);
const renew = sql("workflows.renewLease", `UPDATE workflows SET lease_until = {now_ms} + $ms WHERE name = $name AND lease_owner = $owner`);
const release = sql("workflows.releaseLease", `UPDATE workflows SET lease_owner = NULL, lease_until = NULL WHERE name = $name AND lease_owner = $owner`);
const startRun = sql("workflows.startRun", `INSERT INTO workflow_runs (id, workflow, trigger, dry_run, started_at, status, handled)
   VALUES ($id, $workflow, $trigger, $dryRun::boolean, {now_ms}, 'running', 0)`);
const endRun = sql("workflows.endRun", `UPDATE workflow_runs SET ended_at = {now_ms}, status = $status, error = $error, handled = $handled WHERE id = $id`);
const endInterrupted = sql(
  "workflows.endInterruptedRuns",
  `UPDATE workflow_runs SET status = 'error', ended_at = {now_ms}, error = $error WHERE workflow = $workflow AND status = 'running' AND NOT dry_run`,
);
const recentRuns = sql<Stored<WorkflowRunRow, "dryRun">>(
  "workflows.recentRuns",
  `SELECT ${RUN} FROM workflow_runs WHERE workflow = $workflow ORDER BY started_at DESC, id DESC LIMIT $limit`,
);
const getState = sql<{ value: string }>("workflows.getState", `SELECT value FROM workflow_state WHERE workflow = $workflow AND key = $key`);
const setState = sql("workflows.setState", `INSERT INTO workflow_state (workflow, key, value, updated_at) VALUES ($workflow, $key, $value, {now_ms})
   ON CONFLICT (workflow, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`);
const deleteState = sql("workflows.deleteState", `DELETE FROM workflow_state WHERE workflow = $workflow AND key = $key`);

export const workflows = declare<WorkflowRepository>()({
  create: run(create, (name, cursor) => ({ name, cursor })),
  get: get(byName, (name) => ({ name }), workflow),
  lockForUpdate: get(lockByName, (name) => ({ name }), workflow),
  recordSuccess: run(success, (name, cursor) => ({ name, cursor })),
  recordFailure: run(failure, (name, failures, backoffMs) => ({ name, failures, backoffMs })),
  acquireLease: run(acquire, (name, owner, ms) => ({ name, owner, ms }), changed),
  renewLease: run(renew, (name, owner, ms) => ({ name, owner, ms }), changed),
  releaseLease: run(release, (name, owner) => ({ name, owner })),
  startRun: run(startRun, (r) => ({ id: r.id, workflow: r.workflow, trigger: r.trigger, dryRun: r.dryRun })),
  endRun: run(endRun, (id, end) => ({ id, status: end.status, error: end.error, handled: end.handled })),
  endInterruptedRuns: run(endInterrupted, (workflow, error) => ({ workflow, error }), count),
  recentRuns: all(recentRuns, (workflow, limit) => ({ workflow, limit }), (rows) => rows.map((r) => ({ ...r, dryRun: Boolean(r.dryRun) }))),
  getState: get(getState, (workflow, key) => ({ workflow, key }), (row) => row?.value),
  setState: run(setState, (workflow, key, value) => ({ workflow, key, value })),
  deleteState: run(deleteState, (workflow, key) => ({ workflow, key })),
});
