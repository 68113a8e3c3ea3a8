import { Cron } from "croner";
import { z } from "zod";
import type { App } from "../app";
import { AppError } from "../errors";
import { runRecord } from "../events/schemas";
import { toRunRecord } from "../events/types";
import type { Logger } from "../log";
import { messageRecord, typeError, wholeNumber } from "../messages/schemas";
import type { MessagingBackend } from "./backend";
import type { Workflow } from "./define";
import { loadWorkflows, type LoadProblem } from "./loader";
import { runWorkflow, type RunnerDeps, type RunResult } from "./runner";
import { unmetRequirement } from "./scheduler";
import { runnerDeps } from "./worker";

// The workflows of WORKFLOWS_DIR as `bun run textwire workflows list|run` (src/cli.ts) and the
// console's procedures (src/api/routers/workflows.ts) show and run them: one piece for both.

/** WORKFLOWS_DIR's workflows, what to run them with, and the files skipped. */
export interface WorkflowSet {
  /** The folder; null when WORKFLOWS_DIR is off (no workflows). */
  dir: string | null;
  workflows: Workflow[];
  problems: LoadProblem[];
  deps: RunnerDeps;
}

/** Loads WORKFLOWS_DIR (files already imported come from the module cache) with this process's runner. */
export async function openWorkflows(app: App, log: Logger, remote?: MessagingBackend): Promise<WorkflowSet> {
  const deps = runnerDeps(app, log, remote);
  const dir = app.config.WORKFLOWS_DIR === "off" ? null : app.config.WORKFLOWS_DIR;
  if (dir === null) return { dir, workflows: [], problems: [], deps };
  return { dir, ...(await loadWorkflows(dir)), deps };
}

export const workflowRecord = z
  .object({
    name: z.string(),
    schedule: z.string().meta({ description: "croner pattern, 5 or 6 fields." }),
    timezone: z.string().meta({ description: "IANA zone of the schedule." }),
    next_run: z.string().nullable().meta({ description: "The next scheduled run (ISO 8601, UTC); null when not scheduled or never again." }),
    unmet: z.string().nullable().meta({ description: "Why it cannot run here (a missing generator); null when it can." }),
    last_run: runRecord.nullable(),
  })
  .meta({ id: "Workflow" });

export type RunRecord = z.infer<typeof runRecord>;
export type WorkflowRecord = z.infer<typeof workflowRecord>;

const workflowName = z
  .string(typeError("a string"))
  .min(1, { error: "must not be empty" })
  .max(64, { error: "must be at most 64 characters" })
  .meta({ description: "The workflow's name.", example: "autoresponder" });

export const workflowsOutput = z.object({ workflows: z.array(workflowRecord) });
export const runsInput = z.object({
  name: workflowName,
  limit: wholeNumber(1, { default: 20, max: 100, description: "Most runs returned, newest first; default 20, at most 100." }),
});
export const runsOutput = z.object({ runs: z.array(runRecord) });
export const runNowInput = z.object({
  name: workflowName,
  dry_run: z.boolean(typeError("a boolean")).optional().meta({ description: "Send nothing and leave the cursor and state as they are." }),
});
export const runNowOutput = z.object({
  run_id: z.string().nullable().meta({ description: "The run's record; null when it was skipped." }),
  status: z.enum(["ok", "error", "timeout", "skipped"]),
  error: z.string().optional(),
  handled: z.number().int(),
  sends: z.array(
    z.object({
      phone: z.string().meta({ description: "The contact; empty for a send into a group (`chat_id`)." }),
      chat_id: z.string().optional().meta({ description: "The group it was sent into, when it was." }),
      message: z.string().optional().meta({ description: "The text; absent when only media was sent." }),
      message_id: z.string().optional().meta({ description: "The stored message; absent in a dry run." }),
      status: messageRecord.shape.status.optional().meta({ description: "The message's status; absent in a dry run." }),
    }),
  ),
});

/** Every workflow loaded, in file order: schedule, next run (unless it cannot run here) and last run. */
export async function listWorkflows(set: WorkflowSet): Promise<WorkflowRecord[]> {
  return Promise.all(
    set.workflows.map(async (wf) => {
      const timezone = wf.timezone ?? "UTC";
      const unmet = unmetRequirement(wf, set.deps.backend.hasGenerator);
      const next = unmet ? null : new Cron(wf.schedule, { timezone, paused: true }).nextRun();
      const [last] = await set.deps.storage.workflows.recentRuns(wf.name, 1);
      return { name: wf.name, schedule: wf.schedule, timezone, next_run: next ? next.toISOString() : null, unmet, last_run: last ? toRunRecord(last) : null };
    }),
  );
}

function findWorkflow(set: WorkflowSet, name: string): Workflow {
  const wf = set.workflows.find((w) => w.name === name);
  if (!wf) throw new AppError("NOT_FOUND", `name: no workflow named "${name}"`);
  return wf;
}

/** A loaded workflow's runs, newest first. */
export async function listRuns(set: WorkflowSet, name: string, limit: number): Promise<RunRecord[]> {
  const wf = findWorkflow(set, name);
  return (await set.deps.storage.workflows.recentRuns(wf.name, limit)).map(toRunRecord);
}

/** Runs a loaded workflow now (trigger `manual`), unless what it requires is missing here (503). */
export async function runNow(set: WorkflowSet, name: string, dryRun: boolean): Promise<RunResult> {
  const wf = findWorkflow(set, name);
  const unmet = unmetRequirement(wf, set.deps.backend.hasGenerator);
  if (unmet) throw new AppError("SERVICE_UNAVAILABLE", `workflow ${name} ${unmet}`);
  return runWorkflow(set.deps, wf, { trigger: "manual", dryRun });
}

/** A run's result as the API shows it: a dry run's sends have no message id or status (nothing was stored). */
export function runAnswer(result: RunResult): z.infer<typeof runNowOutput> {
  return {
    run_id: result.runId,
    status: result.status,
    ...(result.error === undefined ? {} : { error: result.error }),
    handled: result.handled,
    sends: result.sends.map((s) => ({
      phone: s.phone,
      ...(s.chat_id === undefined ? {} : { chat_id: s.chat_id }),
      ...(s.message ? { message: s.message } : {}),
      ...(s.dryRun ? {} : { message_id: s.id, status: s.status }),
    })),
  };
}
