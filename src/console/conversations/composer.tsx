import { useQuery } from "@tanstack/react-query";
import { useId, useState } from "react";
import { ErrorAlert } from "../components/error-alert";
import { ROUTE_REASON_WORDS, useSeveralLines, type Line } from "../lines/line";
import { useTRPC } from "../trpc";
import { useMessageForm } from "./use-message-form";

/**
 * Sends to the thread's contact, or into its group (`chat_id`); Enter in the field submits the
 * form; disabled for an opted-out contact. A person's send: it takes the chat over (`handoff`),
 * so automations stay silent there until it is handed back (docs/supervision.md). With several
 * lines, a contact's composer says which line routing would pick and lets the operator choose another.
 */
export function Composer({ to, optedOut = false }: { to: { phone: string } | { chat_id: string }; optedOut?: boolean }) {
  const trpc = useTRPC();
  const noteId = useId();
  const lines = useSeveralLines();
  const [lineId, setLineId] = useState("");
  const phone = "phone" in to ? to.phone : undefined;
  // A line chosen, then disabled or deleted: routing picks again.
  const chosen = lines?.find((l) => l.id === lineId && l.enabled);
  const {
    text,
    setText,
    mutation: send,
    submit,
  } = useMessageForm(chosen ? { ...to, handoff: true, line: chosen.id } : { ...to, handoff: true }, (callbacks) => trpc.messages.send.mutationOptions(callbacks));
  return (
    <form onSubmit={submit}>
      <fieldset role="group" disabled={optedOut} aria-describedby={optedOut ? noteId : undefined}>
        <input
          name="message"
          aria-label="Message"
          placeholder="Message"
          autoComplete="off"
          required
          value={text}
          onChange={(event) => setText(event.target.value)}
        />
        <button type="submit" aria-busy={send.isPending}>
          Send
        </button>
      </fieldset>
      {optedOut && <small id={noteId}>The contact opted out: sends are refused until it replies START.</small>}
      {lines && phone && <LineChoice phone={phone} lines={lines} value={chosen?.id ?? ""} onChange={setLineId} disabled={optedOut} />}
      <ErrorAlert error={send.error} />
    </form>
  );
}

/** "Line": Automatic (the line routing picks now, lines.route) or any enabled line; beside it, the line the send will take and why. */
function LineChoice({
  phone,
  lines,
  value,
  onChange,
  disabled,
}: {
  phone: string;
  lines: Line[];
  value: string;
  onChange: (id: string) => void;
  disabled: boolean;
}) {
  const trpc = useTRPC();
  const routeId = useId();
  const route = useQuery(trpc.lines.route.queryOptions({ phone }));
  const picked = route.data;
  const reroutedFrom = picked?.rerouted_from ? (lines.find((l) => l.id === picked.rerouted_from)?.name ?? picked.rerouted_from) : null;
  const chosen = lines.find((l) => l.id === value);
  return (
    <div className="line-choice">
      <label>
        Line
        <select value={value} onChange={(event) => onChange(event.target.value)} disabled={disabled} aria-describedby={routeId}>
          <option value="">{picked ? `Automatic (${picked.line.name})` : "Automatic"}</option>
          {lines
            .filter((l) => l.enabled)
            .map((l) => (
              <option key={l.id} value={l.id}>
                {l.name} ({l.network})
              </option>
            ))}
        </select>
      </label>
      <small id={routeId} role="status">
        {chosen
          ? `Via ${chosen.name}: chosen here.`
          : picked &&
            (reroutedFrom
              ? `Via ${picked.line.name}: rerouted from ${reroutedFrom}, ${ROUTE_REASON_WORDS[picked.reason] ?? picked.reason}.`
              : `Via ${picked.line.name}: ${picked.reason}, ${ROUTE_REASON_WORDS[picked.reason] ?? picked.reason}.`)}
      </small>
      <ErrorAlert error={route.error} context="Routing" />
    </div>
  );
}
