/** What a chat is: one contact (the spec's per-phone history) or a group. */
export const CHAT_KINDS = ["direct", "group"] as const;
export type ChatKind = (typeof CHAT_KINDS)[number];

/**
 * A direct chat's id is its contact's number without the `+`, after `dm_`: every phone has
 * one without a lookup (the migrations' triggers make the same id in SQL). Group ids are
 * `grp_` + 32 hex digits.
 */
export const DIRECT_CHAT_PREFIX = "dm_";
export const directChatId = (phone: string) => `${DIRECT_CHAT_PREFIX}${phone.slice(1)}`;
/** The contact of a direct chat id, or undefined when the id is not one. */
export const directChatPhone = (id: string) => (/^dm_[1-9]\d{6,14}$/.test(id) ? `+${id.slice(DIRECT_CHAT_PREFIX.length)}` : undefined);
