import { useMutation } from "@tanstack/react-query";
import { useId } from "react";
import type { MessageRecord } from "../../messages/schemas";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { preview } from "./preview";

function ScheduledItem({ message, onCancel, canceling }: { message: MessageRecord; onCancel: () => void; canceling: boolean }) {
  const textId = useId();
  return (
    <li>
      <span id={textId}>
        {message.send_at && <LocalTime value={message.send_at} />}: {preview(message)}
      </span>{" "}
      <button type="button" className="secondary outline compact" aria-describedby={textId} aria-busy={canceling} onClick={onCancel}>
        Cancel
      </button>
    </li>
  );
}

/** The contact's messages still waiting for their send_at (as the loaded history shows them), soonest first, each cancellable. */
export function ScheduledMessages({ messages }: { messages: MessageRecord[] }) {
  const trpc = useTRPC();
  const refresh = useRefreshMessages();
  const cancel = useMutation(trpc.messages.cancel.mutationOptions({ onSettled: refresh }));
  const headingId = useId();
  const scheduled = messages.filter((message) => message.status === "scheduled").sort((a, b) => ((a.send_at ?? "") < (b.send_at ?? "") ? -1 : 1));
  if (scheduled.length === 0 && !cancel.error) return null;
  return (
    <section aria-labelledby={headingId}>
      <h3 id={headingId}>Scheduled</h3>
      <ul>
        {scheduled.map((message) => (
          <ScheduledItem
            key={message.id}
            message={message}
            canceling={cancel.isPending && cancel.variables?.id === message.id}
            onCancel={() => cancel.mutate({ id: message.id })}
          />
        ))}
      </ul>
      <ErrorAlert error={cancel.error} />
    </section>
  );
}
