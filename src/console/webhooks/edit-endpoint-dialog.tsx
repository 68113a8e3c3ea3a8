import { useMutation } from "@tanstack/react-query";
import { useId, type FormEvent } from "react";
import { Modal, SaveFooter } from "../components/modal";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { useInvalidateEndpoints, type Endpoint } from "./endpoint";
import { EndpointFields, readEndpointFields } from "./endpoint-fields";

/** Changes URL, description and events, as `webhooks update` does (src/cli.ts); an emptied description is removed. */
export function EditEndpointDialog({ endpoint, onClose }: { endpoint: Endpoint; onClose: () => void }) {
  const trpc = useTRPC();
  const formId = useId();
  const invalidateEndpoints = useInvalidateEndpoints();
  const update = useMutation(trpc.webhookEndpoints.update.mutationOptions({ onSuccess: invalidateEndpoints }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const { url, description, events } = readEndpointFields(event.currentTarget);
    update.mutate({ id: endpoint.id, url, description: description || null, events: events.length > 0 ? events : null }, { onSuccess: onClose });
  };
  return (
    <Modal title="Edit endpoint" onClose={onClose}>
      <form id={formId} onSubmit={submit}>
        <EndpointFields endpoint={endpoint} />
      </form>
      <ErrorAlert error={update.error} />
      <SaveFooter formId={formId} pending={update.isPending} onCancel={onClose} />
    </Modal>
  );
}
