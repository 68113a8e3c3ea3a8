import type { RunResult } from "./workflow";

/** What one run did: its status, the messages it handled, what it sent (or would send, in a dry run). */
export function RunSummary({ name, dryRun, result }: { name: string; dryRun: boolean; result: RunResult }) {
  return (
    <>
      <p>
        <strong>
          {dryRun ? "Dry run" : "Run"} of {name}: {result.status}
        </strong>
        {result.status === "skipped" ? " (another process is running it)" : `, ${result.handled} handled`}
        {result.error && ` — ${result.error}`}
      </p>
      {result.sends.length > 0 && (
        <>
          <p>{dryRun ? "Would send:" : "Sent:"}</p>
          <ul>
            {result.sends.map((send, i) => (
              <li key={send.message_id ?? i}>
                {send.chat_id ?? send.phone}: {send.message || "(media only)"}
                {send.status && ` (${send.status})`}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}
