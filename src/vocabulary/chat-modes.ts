/**
 * Who answers in a chat (docs/supervision.md): `auto` automations send, `supervised` their
 * sends become drafts a person approves, `human` a person owns it and automations send nothing.
 */
export const CHAT_MODES = ["auto", "supervised", "human"] as const;
export type ChatMode = (typeof CHAT_MODES)[number];

/** Why an automated send was skipped: the contact opted out, a participant muted the group, a person owns the chat. */
export const SKIP_REASONS = ["opted_out", "muted", "human"] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

/** The words that ask for a person (HANDOFF_KEYWORDS' default), matched as the opt-out keywords are. */
export const DEFAULT_HANDOFF_KEYWORDS: readonly string[] = ["agent", "human", "representative"];

/** How long a chat stays `human` after the last person's send (HANDOFF_MINUTES' default). */
export const DEFAULT_HANDOFF_MINUTES = 60;
