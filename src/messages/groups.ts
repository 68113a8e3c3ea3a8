import { writeOrRetry } from "../background";
import type { ChatRow, Storage } from "../db/port";
import { AppError } from "../errors";
import { errorText } from "../log";
import type { NetworkDriver } from "../network/driver";
import { chatById, chatRecordById, groupById, newGroupId, requireGroups, updateGroup } from "./chats";
import type { ChatRecord } from "./chat-schemas";
import { canDo, networkAction } from "./network-actions";
import { markConversationRead } from "./read-state";
import type { MessageRecord } from "./schemas";
import { sendTo, type MessagingDeps } from "./service";
import { setOurGroupTyping, setOurTyping } from "./typing";
import { directChatPhone } from "../vocabulary/chats";

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
  input: { participants: string[]; name?: string | undefined; message: string },
): Promise<{ success: true; chat: ChatRecord; message: MessageRecord }> {
  requireGroups(deps.network, "participants");
  const create = networkAction(deps.network, "createGroup");
  const { storage } = deps;
  const chat = (await storage.chats.create({
    id: newGroupId(),
    kind: "group",
    name: null,
    participants: input.participants,
    network: deps.network.name,
    networkId: null,
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
export async function renameGroup(deps: { storage: Storage; network: NetworkDriver }, id: string, name: string): Promise<ChatRecord> {
  const chat = await groupById(deps.storage, id);
  requireGroups(deps.network, "name");
  if (chat.name !== name) await networkAction(deps.network, "renameGroup")(onNetwork(chat), name);
  await updateGroup(deps.storage, id, (now) => ({ name, participants: now.participants }));
  return chatRecordById(deps.storage, id);
}

/**
 * POST /api/chats/{id}/participants (`add`) and DELETE /api/chats/{id}/participants/{phone}:
 * on the network, then here (event `chat.updated`). Adding a participant already in it
 * changes nothing; removing one not in it is 404.
 */
export async function setGroupParticipant(deps: { storage: Storage; network: NetworkDriver }, id: string, phone: string, add: boolean): Promise<ChatRecord> {
  const chat = await groupById(deps.storage, id);
  requireGroups(deps.network, "phone");
  const member = chat.participants.includes(phone);
  if (!add && !member) throw new AppError("NOT_FOUND", `phone: ${phone} is not a participant of chat ${id}`);
  if (add !== member) {
    await networkAction(deps.network, "setParticipant")(onNetwork(chat), phone, add);
    await updateGroup(deps.storage, id, (now) => ({
      name: now.name,
      participants: add ? [...now.participants, phone] : now.participants.filter((p) => p !== phone),
    }));
  }
  return chatRecordById(deps.storage, id);
}

/** POST|DELETE /api/chats/{id}/typing: a direct chat's is the contact's typing; a group's is kept on the chat and lapses as a contact's does (src/messages/typing.ts). */
export async function setChatTyping(deps: { storage: Storage; network: NetworkDriver }, id: string, on: boolean): Promise<{ typing: boolean }> {
  const chat = await chatById(deps.storage, id);
  const phone = directChatPhone(chat.id);
  if (chat.kind === "direct" && phone) return setOurTyping(deps, phone, on);
  return setOurGroupTyping(deps, chat.id, () => onNetwork(chat), on);
}

/** POST /api/chats/{id}/read: every inbound message of the chat is read; the network told first where it has read receipts. The chat as it is then (`unread` 0). */
export async function markChatRead(deps: { storage: Storage; network: NetworkDriver }, id: string): Promise<ChatRecord> {
  const chat = await chatById(deps.storage, id);
  const phone = directChatPhone(chat.id);
  if (chat.kind === "direct" && phone) await markConversationRead(deps, phone);
  else {
    if (canDo(deps.network, "markRead")) await networkAction(deps.network, "markRead")("", onNetwork(chat));
    await deps.storage.messages.readChatInbound(chat.id);
  }
  return chatRecordById(deps.storage, chat.id);
}
