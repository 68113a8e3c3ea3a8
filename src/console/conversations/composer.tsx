import { useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { useMessageForm } from "./use-message-form";

/**
 * Sends to the thread's contact, or into its group (`chat_id`); Enter in the field submits the
 * form; disabled for an opted-out contact. A person's send: it takes the chat over (`handoff`),
 * so automations stay silent there until it is handed back (docs/supervision.md).
 */
export function Composer({ to, optedOut = false }: { to: { phone: string } | { chat_id: string }; optedOut?: boolean }) {
  const trpc = useTRPC();
  const noteId = useId();
  const { text, setText, mutation: send, submit } = useMessageForm({ ...to, handoff: true }, (callbacks) => trpc.messages.send.mutationOptions(callbacks));
  return (
    <form onSubmit={submit}>
      <fieldset role="group" disabled={optedOut} aria-describedby={optedOut ? noteId : undefined}>
        <input name="message" aria-label="Message" placeholder="Message" autoComplete="off" required value={text} onChange={(event) => setText(event.target.value)} />
        <button type="submit" aria-busy={send.isPending}>
          Send
        </button>
      </fieldset>
      {optedOut && <small id={noteId}>The contact opted out: sends are refused until it replies START.</small>}
      <ErrorAlert error={send.error} />
    </form>
  );
}
