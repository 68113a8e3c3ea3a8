import type { ChatRow, Repositories, Storage } from "../db/port";
import { AppError } from "../errors";
import { DEFAULT_HANDOFF_KEYWORDS, DEFAULT_HANDOFF_MINUTES, type ChatMode } from "../vocabulary/chat-modes";
import { toChatState } from "./chats";

/** What handoffs follow: the words that ask for a person (HANDOFF_KEYWORDS) and how long a chat stays `human` (HANDOFF_MINUTES, in ms). */
export interface Handoff {
  keywords: readonly string[];
  forMs: number;
}

export const handoffOf = (config: { HANDOFF_KEYWORDS?: readonly string[]; HANDOFF_MINUTES?: number } | undefined): Handoff => ({
  keywords: config?.HANDOFF_KEYWORDS ?? DEFAULT_HANDOFF_KEYWORDS,
  forMs: Math.round((config?.HANDOFF_MINUTES ?? DEFAULT_HANDOFF_MINUTES) * 60_000),
});

/**
 * Sets a chat's mode inside a transaction, with event `chat.mode_changed { chat, from, to, by }`
 * (`by`: the acting key's id; null for a keyword). Into `human` the chat remembers the mode it
 * returns to and returns `forMs` from now unless a person's send restarts the time. The same
 * mode again changes nothing (no event). The row as it is then; 404 when no such chat.
 */
export async function changeMode(tx: Repositories, chatId: string, to: ChatMode, by: string | null, forMs: number): Promise<{ chat: ChatRow; changed: boolean }> {
  const chat = await tx.chats.lockForUpdate(chatId);
  if (!chat) throw new AppError("NOT_FOUND", `chat ${chatId} not found`);
  if (chat.mode === to) return { chat, changed: false };
  const stored = (await tx.chats.storedMode(chatId))!;
  const updated = (await tx.chats.setMode(chatId, to === "human" ? { mode: to, modeBefore: stored.mode, humanForMs: forMs } : { mode: to, modeBefore: null, humanForMs: null }))!;
  await tx.events.append("chat.mode_changed", { data: { chat: toChatState(updated), from: chat.mode, to, by } });
  return { chat: updated, changed: true };
}

/** PATCH /api/chats/{id} { mode }, the console's switch and "Hand back": the chat as it is then (404 when none). */
export async function setChatMode(deps: { storage: Storage; config?: Parameters<typeof handoffOf>[0] }, chatId: string, mode: ChatMode, by: string | null): Promise<ChatRow> {
  const { forMs } = handoffOf(deps.config);
  return (await deps.storage.transaction((tx) => changeMode(tx, chatId, mode, by, forMs))).chat;
}

/**
 * After a person's send into a chat: with `handoff` it becomes `human` (by the sender's key);
 * a chat already `human` stays so HANDOFF_MINUTES from now (each person's send restarts the time).
 */
export async function afterPersonSend(
  deps: { storage: Storage; config?: Parameters<typeof handoffOf>[0] },
  chatId: string,
  send: { handoff: boolean; keepsHuman: boolean },
  by: string | null,
): Promise<void> {
  const { forMs } = handoffOf(deps.config);
  if (send.handoff) await deps.storage.transaction((tx) => changeMode(tx, chatId, "human", by, forMs));
  else if (send.keepsHuman) await deps.storage.chats.extendHuman(chatId, forMs);
}

/** How many human chats one sweep returns at most; the rest wait for the next. */
const RETURN_BATCH = 100;

/**
 * The human chats whose time is up return to their previous mode, each with event
 * `chat.mode_changed` (`by` null), each returned by one process only (a conditional UPDATE,
 * timed by the database's clock). Run every few seconds (src/main.ts). How many returned.
 */
export async function returnExpiredHandoffs(storage: Storage): Promise<number> {
  return storage.transaction(async (tx) => {
    const returned = await tx.chats.returnExpiredHuman(RETURN_BATCH);
    for (const chat of returned) await tx.events.append("chat.mode_changed", { data: { chat: toChatState(chat), from: "human", to: chat.mode, by: null } });
    return returned.length;
  });
}
