import { useParams } from "wouter";
import { ConversationList } from "../conversations/conversation-list";
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

/** /conversations and /conversations/:phone: the list beside the open thread. */
export function ConversationsPage() {
  const { phone: param } = useParams<{ phone?: string }>();
  const phone = param === undefined ? undefined : decodedPhone(param);
  return (
    <>
      <div className="page-heading">
        <h1>Conversations</h1>
        <NewMessage />
      </div>
      <div className="conversations">
        <ConversationList openPhone={phone} />
        {phone ? <Thread key={phone} phone={phone} /> : <p>Open a conversation, or start one with “New message”.</p>}
      </div>
    </>
  );
}
