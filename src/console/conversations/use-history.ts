import { useQueries } from "@tanstack/react-query";
import { useState } from "react";
import type { MessageRecord } from "../../messages/schemas";
import { useTRPC } from "../trpc";

/** The most messages.history returns at once (MAX_PAGE in src/messages/schemas.ts). */
const PAGE = 100;

/** Whose messages: a contact's (its direct chat) or a group chat's. */
export type ThreadTarget = { phone: string } | { chatId: string };

/**
 * A contact's or a group's messages, oldest first: the newest page, and older pages as asked.
 * History pages newest first by offset, so a message arriving shifts them: pages are merged
 * by id, the newer page's copy kept.
 */
export function useHistory(target: ThreadTarget) {
  const trpc = useTRPC();
  const [pages, setPages] = useState(1);
  const results = useQueries({
    queries: Array.from({ length: pages }, (_, page) =>
      "phone" in target
        ? trpc.messages.history.queryOptions({ phone: target.phone, limit: PAGE, offset: page * PAGE })
        : trpc.chats.messages.queryOptions({ id: target.chatId, limit: PAGE, offset: page * PAGE }),
    ),
  });
  const byId = new Map<string, MessageRecord>();
  for (const result of results) for (const message of result.data?.messages ?? []) if (!byId.has(message.id)) byId.set(message.id, message);
  const messages = [...byId.values()].sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
  const total = results[0]?.data?.total;
  return {
    messages,
    loaded: results.every((result) => result.data),
    hasOlder: total !== undefined && messages.length < total,
    loadOlder: () => setPages((n) => n + 1),
    fetching: results.some((result) => result.isFetching),
    error: results.find((result) => result.error)?.error,
  };
}
