/**
 * What an API key may be given (docs/security.md says what each one opens); `*` is every
 * scope, the one existing keys and API_KEYS keys hold.
 */
export const SCOPES = [
  "messages:read",
  "messages:send",
  "drafts:write",
  "drafts:approve",
  "webhooks:manage",
  "lines:manage",
  "workflows:manage",
  "keys:manage",
] as const;
export type Scope = (typeof SCOPES)[number];

export const ALL_SCOPES = "*";

/** `known`: the key may send only to phones that wrote to us first, and into chats that exist. */
export const REACHES = ["any", "known"] as const;
export type Reach = (typeof REACHES)[number];

/** Most lines one key may be limited to. */
export const MAX_KEY_LINES = 100;
