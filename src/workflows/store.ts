import { and, desc, eq, isNull, lt, max, ne, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { messages, workflowRuns, workflows, workflowState } from "../db/schema";

/** Backoff after `failures` failed runs in a row: 5 s, 10 s, 20 s … at most 5 minutes. */
export function backoffMs(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(5 * 60_000, 5_000 * 2 ** (failures - 1));
}

export type RunStatus = "ok" | "error" | "timeout";

/** A workflow's rows: cursor, lease, backoff, state and runs. */
export function createWorkflowStore(db: Db, now: () => number = Date.now) {
  const byName = (name: string) => eq(workflows.name, name);

  return {
    /**
     * The workflow's row, created on first sight with the cursor at the newest message
     * then stored (or `start`): a new workflow answers what arrives from now on, not the backlog.
     */
    ensure(name: string, start?: number) {
      return db.transaction(
        (tx) => {
          const row = tx.select().from(workflows).where(byName(name)).get();
          if (row) return row;
          const newest = start ?? tx.select({ ts: max(messages.timestamp) }).from(messages).get()?.ts ?? 0;
          const created = { name, cursor: newest, failures: 0, backoffUntil: null, leaseOwner: null, leaseUntil: null, createdAt: now() };
          tx.insert(workflows).values(created).run();
          return created;
        },
        { behavior: "immediate" },
      );
    },

    get(name: string) {
      return db.select().from(workflows).where(byName(name)).get();
    },

    /** Takes the lease when it is free or expired; false when another run holds it. */
    acquireLease(name: string, owner: string, ms: number): boolean {
      const t = now();
      return (
        db
          .update(workflows)
          .set({ leaseOwner: owner, leaseUntil: t + ms })
          .where(and(byName(name), or(isNull(workflows.leaseUntil), lt(workflows.leaseUntil, t), eq(workflows.leaseOwner, owner))))
          .returning({ name: workflows.name })
          .all().length === 1
      );
    },

    /** Extends a held lease; false when it was lost (expired and taken by another). */
    renewLease(name: string, owner: string, ms: number): boolean {
      return (
        db
          .update(workflows)
          .set({ leaseUntil: now() + ms })
          .where(and(byName(name), eq(workflows.leaseOwner, owner)))
          .returning({ name: workflows.name })
          .all().length === 1
      );
    },

    releaseLease(name: string, owner: string): void {
      db.update(workflows)
        .set({ leaseOwner: null, leaseUntil: null })
        .where(and(byName(name), eq(workflows.leaseOwner, owner)))
        .run();
    },

    /** Ends the runs a dead process left `running`; call while holding the lease. */
    endInterruptedRuns(workflow: string): number {
      return db
        .update(workflowRuns)
        .set({ status: "error", endedAt: now(), error: "interrupted: the process stopped during the run" })
        .where(and(eq(workflowRuns.workflow, workflow), eq(workflowRuns.status, "running"), eq(workflowRuns.dryRun, false)))
        .returning({ id: workflowRuns.id })
        .all().length;
    },

    startRun(id: string, workflow: string, trigger: "schedule" | "manual", dryRun: boolean): void {
      db.insert(workflowRuns).values({ id, workflow, trigger, dryRun, startedAt: now(), status: "running" }).run();
    },

    /**
     * Records a run's end. A real run that succeeded moves the cursor (never backwards) and
     * clears the backoff; one that failed counts a failure and backs off.
     */
    finishRun(run: { id: string; workflow: string; dryRun: boolean; status: RunStatus; error?: string; handled: number; cursor?: number }): void {
      db.transaction((tx) => {
        const t = now();
        tx.update(workflowRuns)
          .set({ endedAt: t, status: run.status, error: run.error ?? null, handled: run.handled })
          .where(eq(workflowRuns.id, run.id))
          .run();
        if (run.dryRun) return;
        const row = tx.select().from(workflows).where(byName(run.workflow)).get();
        if (!row) return;
        if (run.status === "ok") {
          tx.update(workflows)
            .set({ failures: 0, backoffUntil: null, cursor: Math.max(row.cursor, run.cursor ?? row.cursor) })
            .where(byName(run.workflow))
            .run();
        } else {
          const failures = row.failures + 1;
          tx.update(workflows).set({ failures, backoffUntil: t + backoffMs(failures) }).where(byName(run.workflow)).run();
        }
      });
    },

    /** Deletes the records of runs that started before `before` (ms) and ended; returns how many. */
    purgeRunsBefore(before: number): number {
      return db
        .delete(workflowRuns)
        .where(and(lt(workflowRuns.startedAt, before), ne(workflowRuns.status, "running")))
        .returning({ id: workflowRuns.id })
        .all().length;
    },

    lastRun(workflow: string) {
      return db.select().from(workflowRuns).where(eq(workflowRuns.workflow, workflow)).orderBy(desc(workflowRuns.startedAt)).limit(1).get();
    },

    getState(workflow: string, key: string): unknown {
      const row = db
        .select({ value: workflowState.value })
        .from(workflowState)
        .where(and(eq(workflowState.workflow, workflow), eq(workflowState.key, key)))
        .get();
      return row ? JSON.parse(row.value) : undefined;
    },

    setState(workflow: string, key: string, value: unknown): void {
      const json = JSON.stringify(value);
      if (json === undefined) {
        db.delete(workflowState).where(and(eq(workflowState.workflow, workflow), eq(workflowState.key, key))).run();
        return;
      }
      db.insert(workflowState)
        .values({ workflow, key, value: json, updatedAt: now() })
        .onConflictDoUpdate({ target: [workflowState.workflow, workflowState.key], set: { value: json, updatedAt: now() } })
        .run();
    },
  };
}

export type WorkflowStore = ReturnType<typeof createWorkflowStore>;
