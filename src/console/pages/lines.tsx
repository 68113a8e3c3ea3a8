import { useQuery } from "@tanstack/react-query";
import { ErrorAlert } from "../components/error-alert";
import { CreateLine } from "../lines/create-line";
import { LineSection } from "../lines/line-section";
import { useTRPC } from "../trpc";

/** The deployment's lines (docs/lines.md), everything `bun run textwire lines …` does (src/cli.ts). */
export function LinesPage() {
  const trpc = useTRPC();
  const lines = useQuery(trpc.lines.list.queryOptions());
  return (
    <>
      <h1>Lines</h1>
      <p>
        Each line is one number or account on one network. A send goes through the line routing picks: the one asked for, the line answered, the contact's last
        line, iMessage for a new contact that has it, else the default line.
      </p>
      {lines.isPending ? (
        <p aria-busy="true">Loading lines…</p>
      ) : lines.isError ? (
        <ErrorAlert error={lines.error} />
      ) : (
        <>
          <section>
            <h2>Every line</h2>
            {lines.data.lines.map((line) => (
              <LineSection key={line.id} line={line} lines={lines.data.lines} />
            ))}
          </section>
          <CreateLine lines={lines.data.lines} />
        </>
      )}
    </>
  );
}
