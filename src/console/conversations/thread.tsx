import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { useMay } from "../use-scopes";
import { ChatModeControl } from "./chat-mode";
import { Composer } from "./composer";
import { directChatId } from "../../vocabulary/chats";
import { MessageList } from "./message-list";
import { ScheduledMessages } from "./scheduled-messages";
import { SimulateInbound } from "./simulate-inbound";
import { useHistory } from "./use-history";

/** While the contact types: a typing that lapses (60 s without news) writes no event, so the contact is asked again meanwhile. */
const TYPING_RECHECK_MS = 5000;

/**
 * One contact's conversation: its messages, "typing…" while the contact types, what is
 * scheduled, the composer, and on loopback a simulated inbound. Open, it marks the
 * contact's messages read, those arriving while it is open too.
 */
export function Thread({ phone }: { phone: string }) {
  const trpc = useTRPC();
  const headingId = useId();
  const refresh = useRefreshMessages();
  const history = useHistory({ phone });
  const contact = useQuery({
    ...trpc.contacts.get.queryOptions({ phone }),
    refetchInterval: (query) => (query.state.data?.contact.typing ? TYPING_RECHECK_MS : false),
  });
  const system = useQuery({ ...trpc.system.info.queryOptions(), staleTime: Infinity });
  const may = useMay();
  const markRead = useMutation(trpc.contacts.markRead.mutationOptions({ onSuccess: refresh }));
  const optedOut = contact.data?.contact.opted_out === true;
  const typing = contact.data?.contact.typing === true;
  const unread = contact.data?.contact.unread ?? 0;
  const { mutate: markReadNow } = markRead;
  // Read marks are sent to the contact: messages:send.
  const mayMark = may("messages:send");
  // Each fresh answer with messages unread marks them: a message that came between the read and
  // the refresh leaves the count as it was, and must not stay unread while the thread is open.
  const fetchedAt = contact.dataUpdatedAt;
  useEffect(() => {
    if (unread > 0 && mayMark) markReadNow({ phone });
  }, [unread, fetchedAt, phone, markReadNow, mayMark]);
  return (
    <section aria-labelledby={headingId} aria-busy={!history.loaded && !history.error}>
      <h2 id={headingId}>
        <bdi>{phone}</bdi>
      </h2>
      {optedOut && (
        <p>
          <mark>Opted out</mark>
        </p>
      )}
      <ChatModeControl chatId={directChatId(phone)} />
      <ErrorAlert error={history.error ?? contact.error ?? markRead.error} />
      {history.hasOlder && (
        <button type="button" className="secondary outline compact" aria-busy={history.fetching} onClick={history.loadOlder}>
          Load older
        </button>
      )}
      {history.messages.length > 0 ? <MessageList label={`Messages with ${phone}`} messages={history.messages} /> : history.loaded && <p>No messages yet.</p>}
      {/* Always in the page, so that screen readers announce the change. */}
      <p role="status" className="typing">
        {typing && <small>typing…</small>}
      </p>
      <ScheduledMessages messages={history.messages} />
      {may("messages:send") && <Composer to={{ phone }} optedOut={optedOut} />}
      {may("messages:send") && system.data?.network === "loopback" && <SimulateInbound phone={phone} />}
    </section>
  );
}
