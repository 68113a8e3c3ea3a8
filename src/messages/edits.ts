import type { LineRegistry } from "../lines/registry";
import type { MessageRow, Storage } from "../db/port";
import { AppError } from "../errors";
import type { Logger } from "../log";
import type { EditEvent } from "../network/driver";
import { currentRecord, messageById, networkAction, targetOf } from "./network-actions";
import type { MessageRecord } from "./schemas";
import { cleanInboundText } from "./text";

/** iMessage's limits on our own messages: edits within 15 minutes of sending, at most 5 of them; unsends within 2 minutes. */
export const EDIT_WINDOW_MS = 15 * 60_000;
export const MAX_EDITS = 5;
export const UNSEND_WINDOW_MS = 2 * 60_000;

type Deps = { storage: Storage; lines: LineRegistry };

/** Replaces a message's text (at `at`, once) with event `message.edited` carrying the text before, in one transaction. */
function storeEdit(storage: Storage, id: string, text: string, at: number): Promise<boolean> {
  return storage.transaction(async (tx) => {
    const before = await tx.messages.get(id);
    const edited = before !== undefined && (await tx.messages.edit(id, text, at));
    if (edited) await tx.events.append("message.edited", { messageId: id, data: { previous_message: before.body } });
    return edited;
  });
}

/** Unsends a message (once), its text emptied, with event `message.unsent`, in one transaction. */
function storeUnsend(storage: Storage, id: string, at: number): Promise<boolean> {
  return storage.transaction(async (tx) => {
    const unsent = await tx.messages.unsend(id, at);
    if (unsent) await tx.events.append("message.unsent", { messageId: id });
    return unsent;
  });
}

/** Why our message `row` cannot be changed now (409), or its network target. */
function ours(row: MessageRow, verb: "edited" | "unsent", windowMs: number, now: number) {
  const refuse = (why: string) => new AppError("CONFLICT", `message ${row.id} cannot be ${verb}: ${why}`);
  if (row.direction !== "outbound") throw refuse("only our own messages can be");
  if (row.unsentAt !== null) throw refuse("it was unsent");
  if (row.status !== "sent" && row.status !== "delivered") throw refuse(`it is ${row.status}, not sent`);
  if (now - row.timestamp / 1000 > windowMs) throw refuse(`it was sent more than ${windowMs / 60_000} minutes ago`);
  if (verb === "edited" && row.editCount >= MAX_EDITS) throw refuse(`it was edited ${MAX_EDITS} times already`);
  return targetOf(row);
}

/**
 * Edits one of our messages on the network, then its record (`edited_at`, event
 * `message.edited`): 422 when the network cannot, 404 for an unknown id, 409 for a message
 * not ours, not sent, unsent, sent more than 15 minutes ago or edited 5 times.
 */
export async function editOurMessage(deps: Deps, id: string, text: string): Promise<MessageRecord> {
  const row = await messageById(deps.storage, id);
  const edit = networkAction(deps.lines.get(row.lineId), "edit");
  const target = ours(row, "edited", EDIT_WINDOW_MS, Date.now());
  await edit(target, text);
  // Each edit later than the last, as edits apply once per time.
  await storeEdit(deps.storage, id, text, Math.max(Date.now(), (row.editedAt ?? 0) + 1));
  return currentRecord(deps.storage, id);
}

/** Unsends one of our messages on the network, then in its record (`unsent_at`, event `message.unsent`); refusals as editOurMessage's, within 2 minutes. */
export async function unsendOurMessage(deps: Deps, id: string): Promise<MessageRecord> {
  const row = await messageById(deps.storage, id);
  const unsend = networkAction(deps.lines.get(row.lineId), "unsend");
  const target = ours(row, "unsent", UNSEND_WINDOW_MS, Date.now());
  await unsend(target);
  await storeUnsend(deps.storage, id, Date.now());
  return currentRecord(deps.storage, id);
}

/**
 * The contact edited or unsent one of their messages (the network said): applied to its
 * record once per time (a repeated report changes nothing). The new text passes the rules of
 * inbound text. One about a message we do not have is ignored. True when it changed something.
 */
export async function applyInboundEdit(storage: Storage, network: string, event: EditEvent, log: Logger, maxMessageLength: number): Promise<boolean> {
  const row = await storage.messages.byNetworkId(network, "inbound", event.networkId);
  if (row?.phone !== event.phone) {
    log.debug("edit of no message of this conversation ignored", { network, networkId: event.networkId });
    return false;
  }
  if (event.kind === "unsend") return storeUnsend(storage, row.id, event.at);
  const { text, changes } = cleanInboundText(event.message ?? "", maxMessageLength);
  if (Object.keys(changes).length > 0) log.warn("edited text cleaned to the message rules", { network, networkId: event.networkId, ...changes });
  return storeEdit(storage, row.id, text ?? "", event.at);
}
