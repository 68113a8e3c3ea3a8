import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { Link } from "wouter";
import type { ChatRecord } from "../../messages/chat-schemas";
import type { ConversationRecord } from "../../messages/conversations";
import { ErrorAlert } from "../components/error-alert";
import { LocalTime } from "../components/local-time";
import { useSeveralLines } from "../lines/line";
import { useTRPC } from "../trpc";
import { groupLabel } from "./group-label";
import { preview } from "./preview";
import { groupPath, threadPath } from "./thread-path";

/** What conversations.list's `search` accepts: digits and "+", at most 16 (spaces and dashes typed are dropped). */
const searchDigits = (typed: string) => typed.replace(/[^\d+]/g, "").slice(0, 16);

/** How many conversations (and groups) the list shows; the search finds the others. */
const LIMIT = 50;

type Entry = { kind: "direct"; at: string; conversation: ConversationRecord } | { kind: "group"; at: string; chat: ChatRecord };

/** Contacts and groups in one list, the latest activity first (ISO times in UTC compare as text). */
function byActivity(conversations: ConversationRecord[], groups: ChatRecord[]): Entry[] {
  const entries: Entry[] = [
    ...conversations.map((conversation) => ({ kind: "direct" as const, at: conversation.last_message.timestamp, conversation })),
    ...groups.map((chat) => ({ kind: "group" as const, at: chat.last_message_at ?? chat.created_at, chat })),
  ];
  return entries.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
}

/** "N unread" while a conversation has inbound messages not read. */
const Unread = ({ count }: { count: number }) => (count > 0 ? <mark className="unread">{count} unread</mark> : null);

/**
 * The latest conversations, most recently active first, each a link to its thread with its
 * unread count: a contact's by its number, a group's by its name (or its participants);
 * searchable by any part of a number (a group's participants' too). With several lines, a
 * select keeps the contacts whose last message is on one line (groups are then left out: the
 * list of groups does not say their line).
 */
export function ConversationList({ openPhone, openChat }: { openPhone: string | undefined; openChat: string | undefined }) {
  const trpc = useTRPC();
  const [typed, setTyped] = useState("");
  const search = searchDigits(typed);
  const lines = useSeveralLines();
  const [lineId, setLineId] = useState("");
  // A line chosen, then deleted or the only one left: no filter.
  const line = lines?.find((l) => l.id === lineId);
  const list = useQuery({
    ...trpc.conversations.list.queryOptions({ search: search || undefined, limit: LIMIT, line: line?.id }),
    placeholderData: keepPreviousData,
  });
  const groups = useQuery(trpc.chats.list.queryOptions({ kind: "group", limit: LIMIT }));
  const shownGroups = line ? [] : groups.data?.chats.filter((chat) => !search || chat.participants.some((phone) => phone.includes(search)));
  const conversations = list.data && shownGroups && byActivity(list.data.conversations, shownGroups);
  return (
    <section aria-label="Conversation list" className="conversation-list">
      <form role="search" onSubmit={(event) => event.preventDefault()}>
        <input type="search" aria-label="Search by number" placeholder="Search by number" inputMode="tel" value={typed} onChange={(event) => setTyped(event.target.value)} />
        {lines && (
          <select aria-label="Line" value={line?.id ?? ""} onChange={(event) => setLineId(event.target.value)}>
            <option value="">All lines</option>
            {lines.map((l) => (
              <option key={l.id} value={l.id}>
                {l.name}
              </option>
            ))}
          </select>
        )}
      </form>
      <ErrorAlert error={list.error ?? groups.error} />
      {conversations && conversations.length === 0 && (
        <p>
          {search ? `No conversation with a number containing ${search}` : line ? "No conversations" : "No conversations yet"}
          {line ? ` on line ${line.name}.` : "."}
        </p>
      )}
      <ul aria-busy={list.isFetching && !conversations}>
        {conversations?.map((entry) =>
          entry.kind === "group" ? (
            <li key={entry.chat.id}>
              <Link href={groupPath(entry.chat.id)} aria-current={entry.chat.id === openChat ? "page" : undefined}>
                <span>
                  <strong>
                    <bdi>{groupLabel(entry.chat)}</bdi>
                  </strong> <Unread count={entry.chat.unread} />{" "}
                  {entry.chat.last_message_at && <LocalTime value={entry.chat.last_message_at} compact />}
                </span>{" "}
                <small>Group of {entry.chat.participants.length + 1}</small>
              </Link>
            </li>
          ) : (
            <li key={entry.conversation.phone}>
              <Link href={threadPath(entry.conversation.phone)} aria-current={entry.conversation.phone === openPhone ? "page" : undefined}>
                <span>
                  <strong>
                    <bdi>{entry.conversation.phone}</bdi>
                  </strong> <Unread count={entry.conversation.unread} />{" "}
                  <LocalTime value={entry.conversation.last_message.timestamp} compact />
                </span>{" "}
                <small>
                  {entry.conversation.last_message.direction === "outbound" ? "You: " : ""}
                  <bdi>{preview(entry.conversation.last_message)}</bdi>
                </small>
              </Link>
            </li>
          ),
        )}
      </ul>
      {conversations?.length === LIMIT && <small>The {LIMIT} latest conversations: search by number for older ones.</small>}
    </section>
  );
}
