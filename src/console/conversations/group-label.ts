import type { ChatRecord } from "../../messages/chat-schemas";

/** What a group is called in the console: its name, or its participants when it has none. */
export const groupLabel = (chat: Pick<ChatRecord, "name" | "participants">) => chat.name ?? chat.participants.join(", ");
