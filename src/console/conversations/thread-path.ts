/** The thread's address under the console's base; the phone's "+" is encoded (see ConversationsPage for the way back). */
export const threadPath = (phone: string) => `/conversations/${encodeURIComponent(phone)}`;
