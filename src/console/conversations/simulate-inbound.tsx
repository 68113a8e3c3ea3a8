import { useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { useMessageForm } from "./use-message-form";

/** On the loopback network: a message from the contact, as `textwire inbound` delivers it (webhooks.loopback). */
export function SimulateInbound({ phone }: { phone: string }) {
  const trpc = useTRPC();
  const headingId = useId();
  const { text, setText, mutation: receive, submit } = useMessageForm({ phone }, (callbacks) => trpc.webhooks.loopback.mutationOptions(callbacks));
  return (
    <section aria-labelledby={headingId}>
      <h3 id={headingId}>Simulate inbound</h3>
      <form onSubmit={submit}>
        <fieldset role="group">
          <input aria-label="Inbound message" placeholder="Inbound message" autoComplete="off" required value={text} onChange={(event) => setText(event.target.value)} />
          <button type="submit" className="secondary" aria-busy={receive.isPending}>
            Receive
          </button>
        </fieldset>
        <ErrorAlert error={receive.error} />
      </form>
    </section>
  );
}
