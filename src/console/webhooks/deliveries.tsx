import { useMutation, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { Table } from "../components/table";
import { useTRPC } from "../trpc";
import { useInvalidateDeliveries, type Delivery } from "./endpoint";

const STATES = ["pending", "succeeded", "failed"] as const satisfies readonly Delivery["state"][];
type DeliveryState = (typeof STATES)[number];

/** An endpoint's deliveries, newest first, refreshed while shown; a failed one can be retried. */
export function Deliveries({ id, endpointId }: { id: string; endpointId: string }) {
  const trpc = useTRPC();
  const invalidateDeliveries = useInvalidateDeliveries();
  const [state, setState] = useState<DeliveryState | "">("");
  const deliveries = useQuery({
    ...trpc.webhookEndpoints.deliveries.queryOptions({ id: endpointId, status: state || undefined }),
    refetchInterval: 3000,
  });
  const retry = useMutation(trpc.webhookEndpoints.retry.mutationOptions({ onSuccess: invalidateDeliveries }));
  return (
    <section id={id} aria-label="Deliveries">
      <label>
        Show
        <select value={state} onChange={(e) => setState(STATES.find((s) => s === e.target.value) ?? "")}>
          <option value="">all</option>
          {STATES.map((s) => (
            <option key={s}>{s}</option>
          ))}
        </select>
      </label>
      <ErrorAlert error={deliveries.error ?? retry.error} />
      {deliveries.isPending ? (
        <p aria-busy="true">Loading deliveries…</p>
      ) : deliveries.data?.deliveries.length === 0 ? (
        <p>No deliveries{state ? ` ${state}` : ""}.</p>
      ) : (
        deliveries.data && (
          <Table columns={["Event type", "Status", "Attempts", "Last response", "Next attempt", "Error", "Actions"]}>
            {deliveries.data.deliveries.map((d) => (
              <tr key={d.id}>
                <td>{d.event_type}</td>
                <td>{d.state}</td>
                <td>{d.attempts}</td>
                <td>{d.last_status ?? "—"}</td>
                <td>{d.next_attempt_at ? <LocalTime value={d.next_attempt_at} /> : "—"}</td>
                <td>{d.last_error ?? "—"}</td>
                <td>
                  {d.state === "failed" && (
                    <button
                      type="button"
                      className="secondary compact"
                      aria-busy={retry.isPending && retry.variables.delivery_id === d.id}
                      disabled={retry.isPending}
                      onClick={() => retry.mutate({ id: endpointId, delivery_id: d.id })}
                    >
                      Retry
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </Table>
        )
      )}
    </section>
  );
}
