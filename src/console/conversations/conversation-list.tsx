import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { useTRPC } from "../trpc";
import { preview } from "./preview";
import { threadPath } from "./thread-path";

/** What conversations.list's `search` accepts: digits and "+", at most 16 (spaces and dashes typed are dropped). */
const searchDigits = (typed: string) => typed.replace(/[^\d+]/g, "").slice(0, 16);

/** How many conversations the list shows; the search finds the others. */
const LIMIT = 50;

/** The latest conversations, most recently active first, each a link to its thread with its unread count; searchable by any part of the number. */
export function ConversationList({ openPhone }: { openPhone: string | undefined }) {
  const trpc = useTRPC();
  const [typed, setTyped] = useState("");
  const search = searchDigits(typed);
  const list = useQuery({ ...trpc.conversations.list.queryOptions({ search: search || undefined, limit: LIMIT }), placeholderData: keepPreviousData });
  const conversations = list.data?.conversations;
  return (
    <section aria-label="Conversation list" className="conversation-list">
      <form role="search" onSubmit={(event) => event.preventDefault()}>
        <input type="search" aria-label="Search by number" placeholder="Search by number" inputMode="tel" value={typed} onChange={(event) => setTyped(event.target.value)} />
      </form>
      <ErrorAlert error={list.error} />
      {conversations && conversations.length === 0 && <p>{search ? `No conversation with a number containing ${search}.` : "No conversations yet."}</p>}
      <ul aria-busy={list.isFetching && !conversations}>
        {conversations?.map(({ phone, last_message, unread }) => (
          <li key={phone}>
            <Link href={threadPath(phone)} aria-current={phone === openPhone ? "page" : undefined}>
              <span>
                <strong>{phone}</strong> {unread > 0 && <mark className="unread">{unread} unread</mark>} <LocalTime value={last_message.timestamp} compact />
              </span>{" "}
              <small>
                {last_message.direction === "outbound" ? "You: " : ""}
                {preview(last_message)}
              </small>
            </Link>
          </li>
        ))}
      </ul>
      {conversations?.length === LIMIT && <small>The {LIMIT} latest conversations: search by number for older ones.</small>}
    </section>
  );
}
