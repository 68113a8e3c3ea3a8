import { useMutation } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { useInvalidateDeliveries } from "./endpoint";

const DAY_MS = 24 * 60 * 60 * 1000;

/** A datetime-local value (the viewer's zone, to the minute) for the given instant. */
function localInputValue(date: Date): string {
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
}

/** Queues again every event after a time for one endpoint, as `webhooks replay --since` does (src/cli.ts). */
export function ReplayForm({ endpointId }: { endpointId: string }) {
  const trpc = useTRPC();
  const invalidateDeliveries = useInvalidateDeliveries();
  const sinceId = useId();
  // A default for the field only: the server decides which events are after it.
  const [since, setSince] = useState(() => localInputValue(new Date(Date.now() - DAY_MS)));
  const replay = useMutation(trpc.webhookEndpoints.replay.mutationOptions({ onSuccess: invalidateDeliveries }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // datetime-local has no zone: read in the viewer's zone, sent as UTC.
    replay.mutate({ id: endpointId, since: new Date(since).toISOString() });
  };
  return (
    <form onSubmit={submit}>
      <label htmlFor={sinceId}>Replay since</label>
      <fieldset role="group">
        <input id={sinceId} type="datetime-local" required value={since} onChange={(e) => setSince(e.target.value)} />
        {/* An input, not a button: Pico's group keeps its label on one line. */}
        <input type="submit" className="secondary" value="Replay" aria-busy={replay.isPending} disabled={replay.isPending} />
      </fieldset>
      <p role="status">{replay.data && `Queued ${replay.data.queued} ${replay.data.queued === 1 ? "delivery" : "deliveries"} again.`}</p>
      <ErrorAlert error={replay.error} />
    </form>
  );
}
