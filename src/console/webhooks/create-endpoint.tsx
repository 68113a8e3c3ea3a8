import { useMutation } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { ErrorAlert } from "../components/error-alert";
import { ShownOnce } from "../components/shown-once";
import { useTRPC } from "../trpc";
import { useInvalidateEndpoints } from "./endpoint";
import { EndpointFields, readEndpointFields } from "./endpoint-fields";

/** Adds an endpoint; its signing secret is in this answer only (and in a rotation's). */
export function CreateEndpoint() {
  const trpc = useTRPC();
  const headingId = useId();
  // Kept apart from the mutation's state, so a failed next try does not hide a secret not yet stored.
  const [created, setCreated] = useState<{ url: string; secret: string } | null>(null);
  const invalidateEndpoints = useInvalidateEndpoints();
  const create = useMutation(trpc.webhookEndpoints.create.mutationOptions({ onSuccess: invalidateEndpoints }));
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const { url, description, events } = readEndpointFields(form);
    create.mutate(
      { url, description: description || undefined, events: events.length > 0 ? events : undefined },
      {
        onSuccess: ({ endpoint }) => {
          setCreated({ url: endpoint.url, secret: endpoint.secret });
          form.reset();
        },
      },
    );
  };
  return (
    <section aria-labelledby={headingId}>
      <h2 id={headingId}>New endpoint</h2>
      <form onSubmit={submit}>
        <EndpointFields />
        <button type="submit" aria-busy={create.isPending} disabled={create.isPending}>
          Create endpoint
        </button>
      </form>
      <ErrorAlert error={create.error} />
      {created && (
        <ShownOnce
          label={`Signing secret of ${created.url}`}
          value={created.secret}
          note="Store it now: it is not shown again. Receivers verify each delivery's signature with it."
          onDone={() => setCreated(null)}
        />
      )}
    </section>
  );
}
