import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { useCallback, useEffect, useState } from "react";
import { useTRPC } from "./trpc";

/** Refetches what shows messages: the conversation list, the groups, the open thread (history), its contact's opt-out and where a send to it would go. */
export function useRefreshMessages(): () => void {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  return useCallback(() => {
    for (const queryKey of [trpc.conversations.list.pathKey(), trpc.chats.pathKey(), trpc.messages.pathKey(), trpc.contacts.pathKey(), trpc.lines.route.pathKey()]) {
      void queryClient.invalidateQueries({ queryKey });
    }
  }, [trpc, queryClient]);
}

const POLL_MS = 2000;

/**
 * Live updates: polls events.list every 2 s with its cursor (the last event's timestamp) and
 * refreshes the messages when events come, the workflows too on a failed run, the lines on a line's change. Events are
 * kept 30 days, so rather than read them all the cursor starts at the newest message
 * (conversations.list puts it first; event and message times share the database's clock)
 * and skips pages while more follow: one refresh per last page also covers what changed
 * between the page's load and the cursor's. Returns the polling's error, if any.
 */
export function useLiveUpdates(): unknown {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const refresh = useRefreshMessages();
  const [cursor, setCursor] = useState<{ since: string | undefined } | null>(null);
  const newest = useQuery({ ...trpc.conversations.list.queryOptions({ limit: 1 }), enabled: cursor === null });
  const newestTimestamp = newest.data?.conversations[0]?.last_message.timestamp;
  useEffect(() => {
    if (cursor === null && newest.isSuccess) setCursor({ since: newestTimestamp });
  }, [cursor, newest.isSuccess, newestTimestamp]);

  const events = useQuery({
    ...trpc.events.list.queryOptions({ since: cursor?.since, limit: 100 }),
    enabled: cursor !== null,
    refetchInterval: POLL_MS,
    // Each cursor is a new query: keep the last page meanwhile (marked placeholder), forget the old ones.
    placeholderData: keepPreviousData,
    gcTime: 0,
  });
  const page = events.isPlaceholderData ? undefined : events.data;
  useEffect(() => {
    const last = page?.events.at(-1);
    if (!page || !last) return;
    if (!page.has_more) {
      refresh();
      if (page.events.some((event) => event.type === "workflow.run_failed")) void queryClient.invalidateQueries({ queryKey: trpc.workflows.pathKey() });
      if (page.events.some((event) => event.type.startsWith("line."))) void queryClient.invalidateQueries({ queryKey: trpc.lines.pathKey() });
    }
    setCursor({ since: last.timestamp });
  }, [page, refresh, queryClient, trpc]);
  return newest.error ?? events.error;
}
