import { useLayoutEffect, useRef } from "react";
import type { MessageRecord } from "../../messages/schemas";
import { useSeveralLines } from "../lines/line";
import { MessageItem } from "./message-item";
import { useCapabilities } from "./use-capabilities";

/**
 * The thread's messages, oldest first, scrolled to the newest whenever one arrives, "Read"
 * under our last one the contact read; with `senders` (a group) each received one names who
 * sent it; with several lines each names its line. The list scrolls on its own, so it takes keyboard focus (arrow keys scroll it).
 */
export function MessageList({ label, messages, senders = false }: { label: string; messages: MessageRecord[]; senders?: boolean }) {
  const ref = useRef<HTMLOListElement>(null);
  const newestId = messages.at(-1)?.id;
  useLayoutEffect(() => {
    ref.current?.scrollTo({ top: ref.current.scrollHeight });
  }, [newestId]);
  const capabilities = useCapabilities();
  const lines = useSeveralLines();
  const lineNames = new Map(lines?.map((line) => [line.id, line.name]));
  const byId = new Map(messages.map((message) => [message.id, message]));
  const lastRead = messages.findLast((message) => message.direction === "outbound" && message.read_at)?.id;
  return (
    <ol ref={ref} className="thread" tabIndex={0} aria-label={label}>
      {messages.map((message) => (
        <MessageItem
          key={message.id}
          message={message}
          repliesTo={message.reply_to ? byId.get(message.reply_to) : undefined}
          showRead={message.id === lastRead}
          showSender={senders}
          line={lines && (lineNames.get(message.line_id) ?? message.line_id)}
          capabilities={capabilities}
        />
      ))}
    </ol>
  );
}
