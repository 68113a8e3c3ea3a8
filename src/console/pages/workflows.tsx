import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { Table } from "../components/table";
import { useTRPC } from "../trpc";
import { RunHistory } from "../workflows/run-history";
import { RunSummary } from "../workflows/run-summary";
import type { RunInput, Workflow } from "../workflows/workflow";

/** The workflows in WORKFLOWS_DIR (docs/workflows.md): `bun run textwire workflows list|run` in a page (src/cli.ts). */
export function WorkflowsPage() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  // The workflow whose runs are shown: the last one run, or the one asked for with "Runs".
  const [selected, setSelected] = useState<string | null>(null);
  const run = useMutation(
    trpc.workflows.run.mutationOptions({
      onSettled: () => queryClient.invalidateQueries({ queryKey: trpc.workflows.pathKey() }),
    }),
  );
  const start = (name: string, dryRun: boolean) => {
    setSelected(name);
    run.mutate({ name, dry_run: dryRun });
  };
  return (
    <>
      <h1>Workflows</h1>
      <WorkflowTable
        selected={selected}
        running={run.isPending ? run.variables : null}
        onRun={start}
        onSelect={(name) => setSelected(name === selected ? null : name)}
      />
      <div role="status">
        {run.isPending && <p aria-busy="true">Running {run.variables.name}…</p>}
        {run.data && <RunSummary name={run.variables.name} dryRun={run.variables.dry_run ?? false} result={run.data} />}
      </div>
      <ErrorAlert error={run.error} />
      {selected && <RunHistory name={selected} />}
    </>
  );
}

function WorkflowTable({
  selected,
  running,
  onRun,
  onSelect,
}: {
  selected: string | null;
  running: RunInput | null;
  onRun: (name: string, dryRun: boolean) => void;
  onSelect: (name: string) => void;
}) {
  const trpc = useTRPC();
  // Refreshed so the schedule's runs show in "Last result" and "Next run" moves on.
  const workflows = useQuery({ ...trpc.workflows.list.queryOptions(), refetchInterval: 5000 });
  if (workflows.isPending) return <p aria-busy="true">Loading workflows…</p>;
  if (workflows.isError) return <ErrorAlert error={workflows.error} />;
  if (workflows.data.workflows.length === 0) return <NoWorkflows />;
  return (
    <Table columns={["Name", "Schedule", "Next run", "Last result", "Actions"]}>
      {workflows.data.workflows.map((workflow) => (
        <WorkflowRow
          key={workflow.name}
          workflow={workflow}
          selected={workflow.name === selected}
          running={running}
          onRun={(dryRun) => onRun(workflow.name, dryRun)}
          onSelect={() => onSelect(workflow.name)}
        />
      ))}
    </Table>
  );
}

/** A row named by its workflow (`aria-label`), so each workflow's buttons can be told apart. */
function WorkflowRow({
  workflow,
  selected,
  running,
  onRun,
  onSelect,
}: {
  workflow: Workflow;
  selected: boolean;
  running: RunInput | null;
  onRun: (dryRun: boolean) => void;
  onSelect: () => void;
}) {
  const last = workflow.last_run;
  // One run at a time from this page: its result is the one the status region shows.
  const busy = running?.name === workflow.name ? (running.dry_run ? "dry" : "real") : null;
  return (
    <tr aria-label={workflow.name}>
      <th scope="row">{workflow.name}</th>
      <td>
        <code>{workflow.schedule}</code> ({workflow.timezone})
      </td>
      <td>{workflow.unmet ?? (workflow.next_run ? <LocalTime value={workflow.next_run} /> : "Never")}</td>
      <td>
        {last ? (
          <>
            {last.status}
            {last.error && ` (${last.error})`}, {last.handled} handled
            <br />
            <small>
              <LocalTime value={last.started_at} />
            </small>
          </>
        ) : (
          "Never run"
        )}
      </td>
      <td>
        {/* Inputs, not buttons: in a table cell Pico's group would wrap a button's label. */}
        <div role="group">
          <input type="button" value="Run now" aria-busy={busy === "real"} disabled={running !== null} onClick={() => onRun(false)} />
          <input type="button" className="secondary" value="Dry run" aria-busy={busy === "dry"} disabled={running !== null} onClick={() => onRun(true)} />
          <input type="button" className="outline" value="Runs" aria-pressed={selected} onClick={onSelect} />
        </div>
      </td>
    </tr>
  );
}

function NoWorkflows() {
  const trpc = useTRPC();
  const info = useQuery(trpc.system.info.queryOptions());
  const dir = info.data?.workflows_dir;
  return <p>{info.data && (dir ? `No workflows in ${dir}.` : "Workflows are off (WORKFLOWS_DIR=off).")}</p>;
}
