import { useParams } from "wouter";
import { ConversationList } from "../conversations/conversation-list";
import { GroupThread } from "../conversations/group-thread";
import { NewGroup } from "../conversations/new-group";
import { useMay } from "../use-scopes";
import { NewMessage } from "../conversations/new-message";
import { Thread } from "../conversations/thread";

/** wouter decodes the path with decodeURI, which leaves "%2B" (threadPath's "+") encoded; a malformed escape is kept as typed. */
function decodedPhone(param: string): string {
  try {
    return decodeURIComponent(param);
  } catch {
    return param;
  }
}

/** /conversations, /conversations/:phone and /conversations/group/:chat: the list beside the open thread, a contact's or a group's. */
export function ConversationsPage() {
  const may = useMay();
  const { phone: param, chat } = useParams<{ phone?: string; chat?: string }>();
  const phone = param === undefined ? undefined : decodedPhone(param);
  return (
    <>
      <div className="page-heading">
        <h1>Conversations</h1>
        <div className="actions">
          {may("messages:send") && <NewMessage />}
          {may("messages:send") && <NewGroup />}
        </div>
      </div>
      <div className="conversations">
        <ConversationList openPhone={phone} openChat={chat} />
        {chat ? (
          <GroupThread key={chat} chatId={chat} />
        ) : phone ? (
          <Thread key={phone} phone={phone} />
        ) : (
          <p>Open a conversation, or start one with “New message” or “New group”.</p>
        )}
      </div>
    </>
  );
}
