import type { Storage } from "../db/port";
import type { Logger } from "../log";
import type { LineRegistry } from "../lines/registry";
import type { ReadEvent } from "../network/driver";
import { getContact, type ContactRecord } from "./contacts";
import { canDo, contactLine, networkAction } from "./network-actions";

/**
 * The contact read one of our messages (the network's read receipt): it and our earlier
 * messages to them not read yet get `read_at` (never a status: `delivered` stays final),
 * each with event `message.read`. One about no message of ours is ignored. How many were read.
 */
export async function applyReadReceipt(storage: Storage, network: string, event: ReadEvent, log: Logger): Promise<number> {
  const read = await storage.messages.byNetworkId(network, "outbound", event.networkId);
  if (!read) {
    log.debug("read receipt about no message of ours ignored", { network, networkId: event.networkId });
    return 0;
  }
  return storage.transaction(async (tx) => {
    const ids = await tx.messages.readOutbound(read.phone, read.timestamp, event.at);
    for (const messageId of ids) await tx.events.append("message.read", { messageId });
    return ids.length;
  });
}

/**
 * Marks the contact's inbound messages read: told to the network when it has read receipts
 * (first: a failure changes nothing), kept by Textwire alone otherwise. The contact as
 * GET /api/contacts/{phone} answers it, `unread` 0.
 */
export async function markConversationRead(deps: { storage: Storage; lines: LineRegistry }, phone: string): Promise<ContactRecord> {
  const line = await contactLine(deps, phone);
  if (canDo(line.driver, "markRead")) await networkAction(line, "markRead")(phone);
  await deps.storage.messages.readInbound(phone);
  return getContact(deps.storage, phone);
}
