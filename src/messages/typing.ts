import type { Repositories, Storage } from "../db/port";
import { AppError } from "../errors";
import { errorText, type Logger } from "../log";
import type { LineRegistry } from "../lines/registry";
import type { TypingEvent } from "../network/driver";
import { canDo, contactLine, networkAction } from "./network-actions";

/** How long a typing indicator lasts without news: the contact's after the network's last report, ours after we started it. */
export const TYPING_MS = 60_000;
/** How many of our expired indicators one sweep stops. */
const SWEEP_BATCH = 100;

/**
 * Starts (`on`) or stops our typing indicator in the conversation with `phone`: 422 when
 * the network cannot. It stops by itself after TYPING_MS (stopExpiredTyping) and when a
 * message is sent to the contact (stopTypingOnSend).
 */
export async function setOurTyping(deps: { storage: Storage; lines: LineRegistry }, phone: string, on: boolean): Promise<{ typing: boolean }> {
  await networkAction(await contactLine(deps, phone), "typing")(phone, on);
  if (on) await deps.storage.contacts.startOurTyping(phone, TYPING_MS);
  else await deps.storage.contacts.stopOurTyping(phone, false);
  return { typing: on };
}

/**
 * setOurTyping in a group chat (`networkId`: the network's id of it, asked once the network can type): kept on the chat, it
 * stops by itself after TYPING_MS and when a message is sent into the group, as a contact's does.
 */
export async function setOurGroupTyping(
  deps: { storage: Storage; lines: LineRegistry },
  chat: { id: string; lineId: string },
  networkId: () => string,
  on: boolean,
): Promise<{ typing: boolean }> {
  // The network's capability first (422), then whether the group is on it (`networkId` may throw 409).
  const typing = networkAction(deps.lines.get(chat.lineId), "typing");
  await typing("", on, networkId());
  if (on) await deps.storage.chats.startOurTyping(chat.id, TYPING_MS);
  else await deps.storage.chats.stopOurTyping(chat.id, false);
  return { typing: on };
}

/**
 * A message went to the contact, or into the group (`chatId`), while our indicator was on
 * (the send's check read it, so a send writes nothing when it is off): it is off. Only the
 * state: the network stops it itself when a message is sent (BlueBubbles' server does; a
 * DELETE would start it again, docs/networks.md), and the loopback network shows nothing.
 */
export async function stopTypingOnSend(
  deps: { storage: Pick<Repositories, "contacts" | "chats">; lines: LineRegistry; log: Logger },
  to: { phone: string; chatId: string | null; lineId: string },
): Promise<void> {
  if (!canDo(deps.lines.get(to.lineId).driver, "typing")) return;
  const { contacts, chats } = deps.storage;
  // A failure only leaves the state on until the sweep clears it.
  await (to.chatId === null ? contacts.stopOurTyping(to.phone, false) : chats.stopOurTyping(to.chatId, false)).catch((err) =>
    deps.log.warn("typing state not cleared after a send", { error: errorText(err) }),
  );
}

/**
 * Our indicators on past TYPING_MS, to contacts and in groups, stopped: each cleared once
 * (whichever process clears it tells the network), then the network told. Returns how many.
 * Reads first: nothing is written when none expired. A network that cannot stop typing
 * without a send (422, BlueBubbles) is logged at debug only: the state is cleared and the
 * next text stops it there.
 */
export async function stopExpiredTyping(deps: { storage: Storage; lines: LineRegistry; log: Logger }): Promise<number> {
  const { contacts, chats } = deps.storage;
  const expired = [
    ...(await contacts.ourTypingExpired(SWEEP_BATCH)).map((phone) => ({
      clear: () => contacts.stopOurTyping(phone, true),
      stop: async () => (await contactLine(deps, phone)).driver.typing?.(phone, false),
    })),
    ...(await chats.ourTypingExpired(SWEEP_BATCH)).map((chat) => ({
      clear: () => chats.stopOurTyping(chat.id, true),
      stop: async () => deps.lines.find(chat.lineId)?.driver.typing?.("", false, chat.networkId),
    })),
  ];
  let stopped = 0;
  for (const { clear, stop } of expired) {
    if (!(await clear())) continue;
    stopped++;
    await stop().catch((err) => {
      const cannot = err instanceof AppError && err.code === "UNPROCESSABLE_CONTENT";
      deps.log[cannot ? "debug" : "warn"]("the network did not stop our typing", { error: errorText(err) });
    });
  }
  return stopped;
}

/**
 * The contact started or stopped typing (the network said): kept for TYPING_MS, and event
 * `contact.typing` when that changes whether they are typing. A start that lapsed without a
 * stop writes no event when it lapses.
 */
export async function applyTyping(storage: Storage, event: TypingEvent): Promise<boolean> {
  return storage.transaction(async (tx) => {
    const was = await tx.contacts.typing(event.phone);
    await tx.contacts.setTyping(event.phone, event.typing ? TYPING_MS : null);
    if (was === event.typing) return false;
    await tx.events.append("contact.typing", { data: { phone: event.phone, typing: event.typing } });
    return true;
  });
}

/** Whether the contact is typing now (`ctx.isTyping`). */
export const isContactTyping = (storage: Pick<Repositories, "contacts">, phone: string) => storage.contacts.typing(phone);
