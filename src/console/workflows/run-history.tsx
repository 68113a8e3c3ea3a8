import { useQuery } from "@tanstack/react-query";
import { useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { Table } from "../components/table";
import { useTRPC } from "../trpc";

/** The recorded runs of one workflow, newest first, refreshed so scheduled runs appear. */
export function RunHistory({ name }: { name: string }) {
  const trpc = useTRPC();
  const headingId = useId();
  const runs = useQuery({ ...trpc.workflows.runs.queryOptions({ name }), refetchInterval: 5000 });
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>Runs of {name}</h2>
      <ErrorAlert error={runs.error} />
      {runs.isPending ? (
        <p aria-busy="true">Loading runs…</p>
      ) : runs.data?.runs.length === 0 ? (
        <p>Never run.</p>
      ) : (
        runs.data && (
          <Table columns={["Status", "Trigger", "Dry run", "Started", "Handled", "Error"]}>
            {runs.data.runs.map((run) => (
              <tr key={run.id}>
                <td>{run.status}</td>
                <td>{run.trigger}</td>
                <td>{run.dry_run ? "Yes" : "No"}</td>
                <td>
                  <LocalTime value={run.started_at} />
                </td>
                <td>{run.handled}</td>
                <td>{run.error ?? "—"}</td>
              </tr>
            ))}
          </Table>
        )
      )}
    </section>
  );
}
