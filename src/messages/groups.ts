import { writeOrRetry } from "../background";
import type { ChatRow, Storage } from "../db/port";
import { AppError } from "../errors";
import { errorText } from "../log";
import type { Line, LineRegistry } from "../lines/registry";
import { chatById, chatRecordById, groupById, newGroupId, requireGroups, updateGroup } from "./chats";
import type { ChatRecord } from "./chat-schemas";
import { canDo, networkAction } from "./network-actions";
import { markConversationRead } from "./read-state";
import type { MessageRecord } from "./schemas";
import { sendTo, type MessagingDeps } from "./service";
import { setOurGroupTyping, setOurTyping } from "./typing";
import { directChatPhone } from "../vocabulary/chats";

type Deps = { storage: Storage; lines: LineRegistry };

/** The line a group lives on (409 when it was deleted). */
function lineOfChat(deps: Deps, chat: ChatRow): Line {
  const line = deps.lines.find(chat.lineId);
  if (!line) throw new AppError("CONFLICT", `chat ${chat.id} is on a deleted line (${chat.lineId})`);
  return line;
}

/**
 * The line a new group is made on: `line` when named (400 unknown, 409 disabled), else the
 * default line when its network has groups, else the first enabled line whose network has.
 */
function groupLine(lines: LineRegistry, ref: string | undefined): Line {
  if (ref !== undefined) {
    const named = lines.find(ref);
    if (!named) throw new AppError("BAD_REQUEST", `line: no line ${JSON.stringify(ref)} (GET /api/lines lists them)`);
    if (!named.row.enabled) throw new AppError("CONFLICT", `line: the line ${named.row.name} is disabled`);
    return named;
  }
  const fallbackDefault = lines.default();
  if (fallbackDefault.driver.capabilities.groups) return fallbackDefault;
  return lines.all().find((l) => l.row.enabled && l.driver.capabilities.groups) ?? fallbackDefault;
}

/** The group's id on the network: one whose creation never reached the network cannot be changed there (409). */
function onNetwork(chat: ChatRow): string {
  if (chat.networkId === null) throw new AppError("CONFLICT", `chat ${chat.id} is not on the network (its creation failed)`);
  return chat.networkId;
}

/**
 * POST /api/chats: a group is created by sending its first message. The chat and the message
 * are stored first (a crash loses neither), then the network creates the group with the
 * message (BlueBubbles chat/new with every address); the chat then keeps the network's id of
 * it and the participants the network reports, and is named (`name`: renameGroup; a failure
 * to name it is logged). A failure leaves the message failed, as any send.
 */
export async function createGroup(
  deps: MessagingDeps,
  input: { participants: string[]; name?: string | undefined; message: string; line?: string | undefined },
): Promise<{ success: true; chat: ChatRecord; message: MessageRecord }> {
  const line = groupLine(deps.lines, input.line);
  requireGroups(line, "participants");
  const create = networkAction(line, "createGroup");
  const { storage } = deps;
  const chat = (await storage.chats.create({
    id: newGroupId(),
    kind: "group",
    name: null,
    participants: input.participants,
    network: line.row.network,
    networkId: null,
    lineId: line.row.id,
  }))!;
  const message = await sendTo(deps, { phone: "", group: chat }, { message: input.message }, undefined, async (m) => {
    const made = await create({ id: m.id, participants: input.participants, text: m.text });
    // The network took the message: its id of the group is written until it lands.
    await writeOrRetry("recording a new group's network id", () => storage.chats.setNetwork(chat.id, made.chat.networkId, made.chat.participants), deps.log);
    return made;
  });
  // Named once the chat is known by its network id (the network's rename event then finds it); a failure leaves it unnamed.
  if (input.name) await renameGroup(deps, chat.id, input.name).catch((err) => deps.log.warn("the new group was not named", { chatId: chat.id, error: errorText(err) }));
  return { success: true, chat: await chatRecordById(storage, chat.id), message };
}

/** PATCH /api/chats/{id}: renames the group on the network, then here (event `chat.updated`). */
export async function renameGroup(deps: Deps, id: string, name: string): Promise<ChatRecord> {
  const chat = await groupById(deps.storage, id);
  const line = lineOfChat(deps, chat);
  requireGroups(line, "name");
  if (chat.name !== name) await networkAction(line, "renameGroup")(onNetwork(chat), name);
  await updateGroup(deps.storage, id, (now) => ({ name, participants: now.participants }));
  return chatRecordById(deps.storage, id);
}

/**
 * POST /api/chats/{id}/participants (`add`) and DELETE /api/chats/{id}/participants/{phone}:
 * on the network, then here (event `chat.updated`). Adding a participant already in it
 * changes nothing; removing one not in it is 404.
 */
export async function setGroupParticipant(deps: Deps, id: string, phone: string, add: boolean): Promise<ChatRecord> {
  const chat = await groupById(deps.storage, id);
  const line = lineOfChat(deps, chat);
  requireGroups(line, "phone");
  const member = chat.participants.includes(phone);
  if (!add && !member) throw new AppError("NOT_FOUND", `phone: ${phone} is not a participant of chat ${id}`);
  if (add !== member) {
    await networkAction(line, "setParticipant")(onNetwork(chat), phone, add);
    await updateGroup(deps.storage, id, (now) => ({
      name: now.name,
      participants: add ? [...now.participants, phone] : now.participants.filter((p) => p !== phone),
    }));
  }
  return chatRecordById(deps.storage, id);
}

/** POST|DELETE /api/chats/{id}/typing: a direct chat's is the contact's typing; a group's is kept on the chat and lapses as a contact's does (src/messages/typing.ts). */
export async function setChatTyping(deps: Deps, id: string, on: boolean): Promise<{ typing: boolean }> {
  const chat = await chatById(deps.storage, id);
  const phone = directChatPhone(chat.id);
  if (chat.kind === "direct" && phone) return setOurTyping(deps, phone, on);
  return setOurGroupTyping(deps, chat, () => onNetwork(chat), on);
}

/** POST /api/chats/{id}/read: every inbound message of the chat is read; the network told first where it has read receipts. The chat as it is then (`unread` 0). */
export async function markChatRead(deps: Deps, id: string): Promise<ChatRecord> {
  const chat = await chatById(deps.storage, id);
  const phone = directChatPhone(chat.id);
  if (chat.kind === "direct" && phone) await markConversationRead(deps, phone);
  else {
    const line = lineOfChat(deps, chat);
    if (canDo(line.driver, "markRead")) await networkAction(line, "markRead")("", onNetwork(chat));
    await deps.storage.messages.readChatInbound(chat.id);
  }
  return chatRecordById(deps.storage, chat.id);
}
