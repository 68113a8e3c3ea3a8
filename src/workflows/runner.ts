import { keepTrying, repeatEvery } from "../background";
import type { Logger } from "../log";
import { errorText } from "../log";
import type { MessagingBackend } from "./backend";
import { createWorkflowContext, type RunTrack } from "./context";
import { DEFAULT_TIMEOUT_MS, type SentMessage, type Workflow } from "./define";
import type { Storage } from "../db/port";
import type { Recorder } from "../observability/recorder";
import type { RunStatus } from "../vocabulary/workflows";
import { DEFAULT_MENTION_PATTERNS, mentionMatcher } from "./mentions";
import { ensureWorkflow, finishRun, INTERRUPTED_RUN } from "./store";
import { annotateSpan, withSpan } from "../observability/trace";

export interface RunnerDeps {
  backend: MessagingBackend;
  /** Where cursors, leases and runs are kept (local even when the messages are remote). */
  storage: Storage;
  log: Logger;
  maxMessageLength: number;
  /** MENTION_PATTERNS: the words that mention us in a group (default: src/workflows/mentions.ts). */
  mentionPatterns?: readonly string[];
  /** This process, as lease owner. */
  owner: string;
  /** How long a lease lasts unless renewed; renewed every third of it. */
  leaseMs?: number;
  /** Where a new workflow's cursor starts when the messages are elsewhere (remote mode). */
  startCursor?: () => number;
  /** Counts runs and their durations (absent: not counted). */
  metrics?: Pick<Recorder, "workflowRun">;
}

export interface RunResult {
  runId: string | null;
  status: RunStatus | "skipped";
  error?: string;
  handled: number;
  sends: SentMessage[];
}

export const DEFAULT_LEASE_MS = 30_000;

/**
 * One run of a workflow: lease, record, run with its time limit, then commit the cursor
 * (success) or count a failure (backoff), and let the lease go. `stop` aborts the run
 * (shutdown). A dry run takes no lease and changes nothing but its run record.
 */
export function runWorkflow(
  deps: RunnerDeps,
  wf: Workflow,
  opts: { trigger: "schedule" | "manual"; dryRun?: boolean; stop?: AbortSignal },
): Promise<RunResult> {
  return withSpan("workflow.run", { "textwire.workflow": wf.name, "textwire.workflow.trigger": opts.trigger, "textwire.workflow.dry_run": opts.dryRun ?? false }, async () => {
    const result = await runOnce(deps, wf, opts);
    annotateSpan({ "textwire.workflow.status": result.status, "textwire.workflow.handled": result.handled });
    return result;
  });
}

async function runOnce(deps: RunnerDeps, wf: Workflow, opts: Parameters<typeof runWorkflow>[2]): Promise<RunResult> {
  const dryRun = opts.dryRun ?? false;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const workflows = deps.storage.workflows;
  const ensured = await ensureWorkflow(deps.storage, wf.name, deps.startCursor?.());
  if (!dryRun && !(await workflows.acquireLease(wf.name, deps.owner, leaseMs))) {
    return { runId: null, status: "skipped", error: "another run of this workflow is in progress", handled: 0, sends: [] };
  }
  // Read again under the lease: the previous holder (another process) may have moved the cursor.
  const row = dryRun ? ensured : ((await workflows.get(wf.name)) ?? ensured);
  if (!dryRun) await workflows.endInterruptedRuns(wf.name, INTERRUPTED_RUN);

  const runId = Bun.randomUUIDv7();
  const log = deps.log.child({ workflow: wf.name, runId });
  // Before any timer or listener: if the database refuses it, the tick fails and nothing is left running.
  await workflows.startRun({ id: runId, workflow: wf.name, trigger: opts.trigger, dryRun });
  const started = performance.now();
  const abort = new AbortController();
  const timeoutMs = wf.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timer = setTimeout(() => abort.abort(`timed out after ${timeoutMs} ms`), timeoutMs);
  const onStop = () => abort.abort("the process is shutting down");
  opts.stop?.addEventListener("abort", onStop);
  // A renewal that fails (a busy database) is retried sooner; one that finds the lease taken aborts the run.
  const renew = dryRun
    ? undefined
    : repeatEvery("lease renewal", leaseMs / 3, async () => {
        if (!(await workflows.renewLease(wf.name, deps.owner, leaseMs))) abort.abort("lost the lease to another process");
      }, log);
  const track: RunTrack = { cursor: row.cursor, handled: new Set(), sends: [] };
  // The network is read inside the run, so that a server that does not answer fails the run like any ctx call.
  const run = async () =>
    wf.run(
      createWorkflowContext({
        workflow: wf.name,
        backend: deps.backend,
        workflows,
        maxMessageLength: deps.maxMessageLength,
        groups: wf.groups ?? "off",
        mentioned: mentionMatcher(deps.mentionPatterns ?? DEFAULT_MENTION_PATTERNS),
        track,
        network: await deps.backend.network(),
        dryRun,
        signal: abort.signal,
        log,
      }),
    );

  let status: RunStatus = "ok";
  let error: string | undefined;
  try {
    const aborted = new Promise<never>((_, reject) =>
      abort.signal.addEventListener("abort", () => reject(new Error(String(abort.signal.reason))), { once: true }),
    );
    await Promise.race([run(), aborted]);
  } catch (err) {
    status = abort.signal.aborted && String(abort.signal.reason).startsWith("timed out") ? "timeout" : "error";
    error = errorText(err);
  } finally {
    clearTimeout(timer);
    opts.stop?.removeEventListener("abort", onStop);
    if (!abort.signal.aborted) abort.abort("run finished");
  }

  const handled = track.handled.size;
  deps.metrics?.workflowRun(wf.name, status, (performance.now() - started) / 1000);
  // The lease stays renewed while the run's end waits for a busy database; past a lease's length,
  // the next run ends this one as interrupted and sees its messages again.
  const finish = { id: runId, workflow: wf.name, dryRun, status, error, handled, cursor: track.cursor };
  await keepTrying("recording the run's end", () => finishRun(deps.storage, finish), log, { giveUpAfterMs: leaseMs });
  renew?.stop();
  if (!dryRun) {
    try {
      await workflows.releaseLease(wf.name, deps.owner);
    } catch (err) {
      // Not retried later: this owner's next run may hold the lease by then. It expires on its own.
      log.warn("releasing the lease failed; it expires on its own", { error: errorText(err) });
    }
  }
  if (status === "ok") log.info("workflow run ok", { handled, sent: track.sends.length, dryRun });
  else log.warn(`workflow run ${status}`, { error, handled, dryRun });
  return { runId, status, error, handled, sends: track.sends };
}
