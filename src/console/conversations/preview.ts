import type { MessageRecord } from "../../messages/schemas";

/** A message in one line of a list: its text, or how many files it carries when it has none. */
export const preview = (message: MessageRecord) => message.message || `${message.media.length} file(s)`;
