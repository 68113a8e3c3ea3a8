import { useQuery } from "@tanstack/react-query";
import { useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { Composer } from "./composer";
import { MessageList } from "./message-list";
import { ScheduledMessages } from "./scheduled-messages";
import { SimulateInbound } from "./simulate-inbound";
import { useHistory } from "./use-history";

/** One contact's conversation: its messages, what is scheduled, the composer, and on loopback a simulated inbound. */
export function Thread({ phone }: { phone: string }) {
  const trpc = useTRPC();
  const headingId = useId();
  const history = useHistory(phone);
  const contact = useQuery(trpc.contacts.get.queryOptions({ phone }));
  const system = useQuery({ ...trpc.system.info.queryOptions(), staleTime: Infinity });
  const optedOut = contact.data?.contact.opted_out === true;
  return (
    <section aria-labelledby={headingId} aria-busy={!history.loaded && !history.error}>
      <h2 id={headingId}>{phone}</h2>
      {optedOut && (
        <p>
          <mark>Opted out</mark>
        </p>
      )}
      <ErrorAlert error={history.error ?? contact.error} />
      {history.hasOlder && (
        <button type="button" className="secondary outline compact" aria-busy={history.fetching} onClick={history.loadOlder}>
          Load older
        </button>
      )}
      {history.messages.length > 0 ? <MessageList phone={phone} messages={history.messages} /> : history.loaded && <p>No messages yet.</p>}
      <ScheduledMessages messages={history.messages} />
      <Composer phone={phone} optedOut={optedOut} />
      {system.data?.network === "loopback" && <SimulateInbound phone={phone} />}
    </section>
  );
}
