/** The thread's address under the console's base; the phone's "+" is encoded (see ConversationsPage for the way back). */
export const threadPath = (phone: string) => `/conversations/${encodeURIComponent(phone)}`;

/** A group chat's thread (its id is URL-safe: `grp_` and hex digits). */
export const groupPath = (chatId: string) => `/conversations/group/${chatId}`;
