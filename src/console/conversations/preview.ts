import type { MessageRecord } from "../../messages/schemas";

/** A message in one line of a list: its text, or how many files it carries when it has none; "Unsent" once unsent (its text is gone). */
export const preview = (message: MessageRecord) => (message.unsent_at ? "Unsent" : message.message || `${message.media.length} file(s)`);
