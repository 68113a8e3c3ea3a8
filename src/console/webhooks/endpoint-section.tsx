import { useMutation } from "@tanstack/react-query";
import { useId, useState } from "react";
import { ConfirmDialog } from "../components/confirm-dialog";
import { ErrorAlert } from "../components/error-alert";
import { ShownOnce } from "../components/shown-once";
import { useTRPC } from "../trpc";
import { Deliveries } from "./deliveries";
import { EditEndpointDialog } from "./edit-endpoint-dialog";
import { endpointState, useInvalidateEndpoints, type Endpoint } from "./endpoint";
import { ReplayForm } from "./replay-form";

/** One endpoint, a region named by its URL, so its buttons can be told from another endpoint's. */
export function EndpointSection({ endpoint }: { endpoint: Endpoint }) {
  const trpc = useTRPC();
  const invalidateEndpoints = useInvalidateEndpoints();
  const update = useMutation(trpc.webhookEndpoints.update.mutationOptions({ onSuccess: invalidateEndpoints }));
  const rotate = useMutation(trpc.webhookEndpoints.rotateSecret.mutationOptions());
  const [dialog, setDialog] = useState<"edit" | "delete" | null>(null);
  const [showDeliveries, setShowDeliveries] = useState(false);
  const deliveriesId = useId();
  const closeDialog = () => setDialog(null);
  return (
    <section aria-label={endpoint.url}>
      <article>
        <header>
          <h3>
            <code>{endpoint.url}</code>
          </h3>
          {endpoint.description && <p>{endpoint.description}</p>}
        </header>
        <p>
          <strong>State:</strong> {endpointState(endpoint)}
          <br />
          <strong>Events:</strong> {endpoint.events ? endpoint.events.join(", ") : "every type"}
        </p>
        <div role="group">
          <button type="button" className="secondary" aria-busy={update.isPending} disabled={update.isPending} onClick={() => update.mutate({ id: endpoint.id, enabled: !endpoint.enabled })}>
            {endpoint.enabled ? "Disable" : "Enable"}
          </button>
          <button type="button" className="secondary" onClick={() => setDialog("edit")}>
            Edit
          </button>
          <button type="button" className="secondary" aria-busy={rotate.isPending} disabled={rotate.isPending} onClick={() => rotate.mutate({ id: endpoint.id })}>
            Rotate secret
          </button>
          <button type="button" className="secondary" onClick={() => setDialog("delete")}>
            Delete
          </button>
        </div>
        <ErrorAlert error={update.error ?? rotate.error} />
        {rotate.data && (
          <ShownOnce
            label="New signing secret"
            value={rotate.data.endpoint.secret}
            note="Store it now: it is not shown again. For 24 hours deliveries are signed with the old secret too, so receivers can switch."
            onDone={rotate.reset}
          />
        )}
        <ReplayForm endpointId={endpoint.id} />
        <button type="button" className="outline" aria-expanded={showDeliveries} aria-controls={deliveriesId} onClick={() => setShowDeliveries(!showDeliveries)}>
          Deliveries
        </button>
        {showDeliveries && <Deliveries id={deliveriesId} endpointId={endpoint.id} />}
      </article>
      {dialog === "edit" && <EditEndpointDialog endpoint={endpoint} onClose={closeDialog} />}
      {dialog === "delete" && <DeleteEndpointDialog endpoint={endpoint} onClose={closeDialog} />}
    </section>
  );
}

function DeleteEndpointDialog({ endpoint, onClose }: { endpoint: Endpoint; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidateEndpoints = useInvalidateEndpoints();
  const remove = useMutation(trpc.webhookEndpoints.delete.mutationOptions({ onSuccess: invalidateEndpoints }));
  return (
    <ConfirmDialog
      title="Delete this endpoint?"
      confirmLabel="Delete endpoint"
      busy={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate({ id: endpoint.id }, { onSuccess: onClose })}
      onClose={onClose}
    >
      <p>
        <code>{endpoint.url}</code> and its deliveries are deleted: nothing more is sent to it. This cannot be undone.
      </p>
    </ConfirmDialog>
  );
}
