import { useMutation, useQuery } from "@tanstack/react-query";
import { useId, useState, type FormEvent } from "react";
import { Link } from "wouter";
import type { MessageRecord } from "../../messages/schemas";
import { directChatPhone } from "../../vocabulary/chats";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { groupPath, threadPath } from "../conversations/thread-path";
import { useRefreshMessages } from "../live";
import { useTRPC } from "../trpc";

/**
 * The Drafts inbox (docs/supervision.md): automated replies held in supervised chats, oldest
 * first, each approved as written, edited then approved, or rejected. New drafts arrive with
 * the live updates (a `message.drafted` event refreshes the messages, drafts included).
 */
export function DraftsPage() {
  const trpc = useTRPC();
  const drafts = useQuery(trpc.messages.drafts.queryOptions({ limit: 100 }));
  const headingId = useId();
  const list = drafts.data?.drafts ?? [];
  return (
    <>
      <h1 id={headingId}>Drafts</h1>
      <p>Automated replies waiting for a person: nothing is sent until you approve it.</p>
      <ErrorAlert error={drafts.error} />
      {/* Always in the page, so that screen readers announce a new draft. */}
      <p role="status">{drafts.data && (drafts.data.total === 0 ? "No drafts waiting." : `${drafts.data.total} draft${drafts.data.total === 1 ? "" : "s"} waiting.`)}</p>
      {list.length > 0 && (
        <ul aria-labelledby={headingId} className="drafts">
          {list.map((draft) => (
            <li key={draft.id}>
              <DraftItem draft={draft} />
            </li>
          ))}
        </ul>
      )}
    </>
  );
}

/** One draft: where it goes, when it was written, its text in a field to edit, Approve and Reject. */
function DraftItem({ draft }: { draft: MessageRecord }) {
  const trpc = useTRPC();
  const refresh = useRefreshMessages();
  const headingId = useId();
  const [text, setText] = useState(draft.message);
  const approve = useMutation(trpc.messages.approve.mutationOptions({ onSuccess: refresh }));
  const reject = useMutation(trpc.messages.reject.mutationOptions({ onSuccess: refresh }));
  const busy = approve.isPending || reject.isPending;
  const edited = text.trim() !== "" && text !== draft.message;
  const phone = directChatPhone(draft.chat_id);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!busy) approve.mutate({ id: draft.id, ...(edited ? { message: text } : {}) });
  };
  return (
    <article aria-labelledby={headingId}>
      <h2 id={headingId}>
        To <bdi>{phone ?? draft.chat_id}</bdi>
      </h2>
      <p>
        <small>
          Written <LocalTime value={draft.timestamp} />. <Link href={phone ? threadPath(phone) : groupPath(draft.chat_id)}>Open the conversation</Link>
        </small>
      </p>
      <form onSubmit={submit}>
        <label>
          Reply
          <textarea dir="auto" rows={3} required value={text} onChange={(event) => setText(event.target.value)} />
        </label>
        <div role="group">
          <button type="submit" aria-busy={approve.isPending} disabled={busy}>
            {edited ? "Approve edited" : "Approve"}
          </button>
          <button type="button" className="secondary" aria-busy={reject.isPending} disabled={busy} onClick={() => reject.mutate({ id: draft.id })}>
            Reject
          </button>
        </div>
      </form>
      <ErrorAlert error={approve.error ?? reject.error} />
    </article>
  );
}
