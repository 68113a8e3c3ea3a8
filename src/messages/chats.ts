import type { ChatRow, ChatView, Repositories, Storage } from "../db/port";
import { AppError } from "../errors";
import type { Line, LineRegistry } from "../lines/registry";
import type { LineRef } from "../vocabulary/lines";
import type { GroupInfo, NetworkDriver } from "../network/driver";
import { directChatPhone, type ChatKind } from "../vocabulary/chats";
import type { ChatRecord, ChatState } from "./chat-schemas";
import { isE164 } from "./phone";
import { pageAnswer, toRecords } from "./records";
import { MAX_PAGE } from "./schemas";
import { isoTime } from "./time";

/** A chat as event `chat.updated` carries it: the record without the reader's unread count. */
export function toChatState(row: ChatRow): ChatState {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    participants: row.participants,
    created_at: isoTime(row.createdAt),
    last_message_at: row.lastMessageAt === null ? null : isoTime(row.lastMessageAt),
    muted: row.muted,
    mode: row.mode,
    previous_mode: row.previousMode,
    human_until: row.humanUntil === null ? null : isoTime(row.humanUntil * 1000),
  };
}

/** A chat as clients see it. */
export const toChatRecord = (view: ChatView): ChatRecord => ({ ...toChatState(view), unread: view.unread });

/** The chat `id` names as the API answers it, or 404. */
export async function chatRecordById(repos: Pick<Repositories, "chats">, id: string): Promise<ChatRecord> {
  const view = await repos.chats.view(id);
  if (!view) throw new AppError("NOT_FOUND", `chat ${id} not found`);
  return toChatRecord(view);
}

/** The chat `id` names, or 404 (`field` names where the id came from when it is not the path's). */
export async function chatById(repos: Pick<Repositories, "chats">, id: string, field?: string): Promise<ChatRow> {
  const row = await repos.chats.get(id);
  if (row) return row;
  if (field) throw new AppError("BAD_REQUEST", `${field}: no chat with this id`);
  throw new AppError("NOT_FOUND", `chat ${id} not found`);
}

/** GET /api/chats: latest activity first, of `kind` when given; `limit` clamped to 100. */
export async function listChats(storage: Pick<Repositories, "chats">, input: { kind?: ChatKind; limit: number; offset: number }) {
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = await storage.chats.list(input.kind, limit, input.offset);
  return { success: true, chats: rows.map(toChatRecord), total, limit, offset: input.offset };
}

/** GET /api/chats/{id}/messages: a direct chat's is its contact's history; a group's, newest first, as history. */
export async function listChatMessages(storage: Pick<Repositories, "chats" | "messages">, input: { id: string; limit: number; offset: number }) {
  const chat = await chatById(storage, input.id);
  const phone = chat.kind === "direct" ? directChatPhone(chat.id) : undefined;
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = phone ? await storage.messages.history(phone, limit, input.offset) : await storage.messages.chatHistory(chat.id, limit, input.offset);
  return pageAnswer(await toRecords(storage.messages, rows), total, limit, input.offset);
}

/** A group chat on this line, or 422 when its network has no groups (`field` names the request's field). */
export function requireGroups(line: Line, field: string): void {
  if (!line.driver.capabilities.groups) throw new AppError("UNPROCESSABLE_CONTENT", `${field}: the ${line.driver.name} network cannot do group chats (line ${line.row.name})`);
}

/** Where a send goes: a contact (`group` absent) or a group chat (`phone` ''). */
export type SendTarget = { phone: string; group?: undefined } | { phone: ""; group: ChatRow };

/**
 * The target of a send that names `chat_id`: a direct chat is its contact's phone (sent as any
 * send to a phone is); a group needs a network with groups, the group's own network (422), and
 * the chat on it (409 when its creation never reached the network).
 */
export async function chatTarget(deps: { storage: Pick<Repositories, "chats">; lines: LineRegistry }, chatId: string): Promise<SendTarget> {
  const chat = await chatById(deps.storage, chatId, "chat_id");
  if (chat.kind === "direct") return { phone: directChatPhone(chat.id)! };
  const line = deps.lines.find(chat.lineId);
  if (!line) throw new AppError("CONFLICT", `chat_id: the chat's line ${chat.lineId} was deleted`);
  requireGroups(line, "chat_id");
  if (chat.networkId === null) throw new AppError("CONFLICT", `chat_id: chat ${chat.id} is not on the network (its creation failed)`);
  return { phone: "", group: chat };
}

/** A group chat the caller names (the path's `id`): 404 when none, 409 when it is a direct chat. */
export async function groupById(repos: Pick<Repositories, "chats">, id: string): Promise<ChatRow> {
  const chat = await chatById(repos, id);
  if (chat.kind !== "group") throw new AppError("CONFLICT", `chat ${id} is a direct chat: only a group has a name and participants to change`);
  return chat;
}

/** A new group chat's id. */
export const newGroupId = () => `grp_${Bun.randomUUIDv7().replaceAll("-", "")}`;

/**
 * The group chat a network's message is in: the stored one, or made now from what the network
 * said of it (two deliveries racing both end with the one the unique network id kept).
 */
export async function groupChat(storage: Pick<Repositories, "chats">, on: LineRef, info: GroupInfo): Promise<ChatRow> {
  const { network } = on;
  const known = await storage.chats.byNetworkId(network, info.networkId);
  if (known) return known;
  const made = await storage.chats.create({ id: newGroupId(), kind: "group", name: info.name, participants: unique(info.participants), network, networkId: info.networkId, lineId: on.id });
  return made ?? (await storage.chats.byNetworkId(network, info.networkId))!;
}

/** Participants as a chat keeps them: E.164 numbers (an iMessage email address is left out), each once. */
const unique = (phones: readonly string[]) => [...new Set(phones.filter(isE164))];
const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((p, i) => p === b[i]);

/**
 * A group's name or participants changed: stored, and event `chat.updated` (data: the chat
 * record) in the same transaction, when anything changed. The chat as it is then.
 */
export async function updateGroup(
  storage: Storage,
  id: string,
  change: (chat: ChatRow) => { name: string | null; participants: readonly string[] },
): Promise<{ chat: ChatRow; changed: boolean }> {
  return storage.transaction(async (tx) => {
    const chat = await tx.chats.lockForUpdate(id);
    if (!chat) throw new AppError("NOT_FOUND", `chat ${id} not found`);
    const next = change(chat);
    const participants = unique(next.participants);
    if (next.name === chat.name && sameList(participants, chat.participants)) return { chat, changed: false };
    const updated = (await tx.chats.update(id, { name: next.name, participants }))!;
    await tx.events.append("chat.updated", { data: toChatState(updated) });
    return { chat: updated, changed: true };
  });
}

/** A network reported a group as it is now (renamed, participants added, removed or left): stored, made on first sight. Whether it changed. */
export async function applyGroupReport(storage: Storage, on: LineRef, info: GroupInfo): Promise<boolean> {
  const chat = await groupChat(storage, on, info);
  return (await updateGroup(storage, chat.id, () => ({ name: info.name, participants: info.participants }))).changed;
}

/**
 * Whether automated sends (workflows, `generate` with `auto_send`) to the chat wait: a
 * participant replied STOP there and not START since. Sends through the API still go.
 */
export const isChatMuted = (storage: Pick<Repositories, "chats">, chatId: string): Promise<boolean> => storage.chats.muted(chatId);

/** The answer to an automated send into a muted group (403, nothing stored). */
export const chatMutedError = () =>
  new AppError("FORBIDDEN", "chat_id: a participant replied STOP in this group: automated sends to it wait until they send START there");
