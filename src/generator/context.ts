import type { MessageRecord } from "../messages/schemas";
import type { ContextTurn } from "./prompt";

/**
 * A conversation's messages (newest first, as history answers) as the generator's turns,
 * oldest first: the contact's as user, ours as assistant. Messages without text (media,
 * unsent) are left out: the generator refuses an empty turn. With `senders` (a group chat)
 * each inbound turn starts with who wrote it, `+14155550123: …`.
 */
export function historyContext(messages: readonly Pick<MessageRecord, "direction" | "message" | "phone">[], opts: { senders?: boolean } = {}): ContextTurn[] {
  return messages
    .filter((m) => m.message.trim() !== "")
    .reverse()
    .map((m) =>
      m.direction === "inbound"
        ? { role: "user", content: opts.senders && m.phone ? `${m.phone}: ${m.message}` : m.message }
        : { role: "assistant", content: m.message },
    );
}
