import { useMutation, useQuery } from "@tanstack/react-query";
import { useEffect, useId } from "react";
import { ErrorAlert } from "../components/error-alert";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";
import { useMay } from "../use-scopes";
import { ChatModeControl } from "./chat-mode";
import { Composer } from "./composer";
import { groupLabel } from "./group-label";
import { MessageList } from "./message-list";
import { useHistory } from "./use-history";

/**
 * One group chat: its name (or participants), its messages with each received one's sender,
 * and the composer into it. Open, it marks the group's messages read, those arriving while it
 * is open too. No "typing…" and no "Read": networks report neither in a group (docs/networks.md).
 */
export function GroupThread({ chatId }: { chatId: string }) {
  const trpc = useTRPC();
  const may = useMay();
  const headingId = useId();
  const refresh = useRefreshMessages();
  const chat = useQuery(trpc.chats.get.queryOptions({ id: chatId }));
  const history = useHistory({ chatId });
  const markRead = useMutation(trpc.chats.markRead.mutationOptions({ onSuccess: refresh }));
  const group = chat.data?.chat;
  const label = group ? groupLabel(group) : chatId;
  const unread = group?.unread ?? 0;
  const { mutate: markReadNow } = markRead;
  // Read marks are sent to the contact: messages:send.
  const mayMark = may("messages:send");
  // Each fresh answer with messages unread marks them: a message that came between the read and
  // the refresh leaves the count as it was, and must not stay unread while the thread is open.
  const fetchedAt = chat.dataUpdatedAt;
  useEffect(() => {
    if (unread > 0 && mayMark) markReadNow({ id: chatId });
  }, [unread, fetchedAt, chatId, markReadNow, mayMark]);
  return (
    <section aria-labelledby={headingId} aria-busy={!history.loaded && !history.error}>
      <h2 id={headingId}>
        <bdi>{label}</bdi>
      </h2>
      {group && <p>Group with {group.participants.join(", ")}</p>}
      <ChatModeControl chatId={chatId} />
      <ErrorAlert error={chat.error ?? history.error ?? markRead.error} />
      {history.hasOlder && (
        <button type="button" className="secondary outline compact" aria-busy={history.fetching} onClick={history.loadOlder}>
          Load older
        </button>
      )}
      {history.messages.length > 0 ? <MessageList label={`Messages in ${label}`} messages={history.messages} senders /> : history.loaded && <p>No messages yet.</p>}
      {may("messages:send") && <Composer to={{ chat_id: chatId }} />}
    </section>
  );
}
