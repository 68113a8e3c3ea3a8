import type { LineRegistry } from "../lines/registry";
import type { MessageRow, Repositories, Storage } from "../db/port";
import type { Logger } from "../log";
import type { ReactionEvent } from "../network/driver";
import type { Reaction } from "../vocabulary/reactions";
import { currentRecord, messageById, networkAction, targetInChat } from "./network-actions";
import type { MessageRecord } from "./schemas";

type Deps = { storage: Storage; lines: LineRegistry };

/** Who reacted, as a reaction's row keeps it: the contact (`inbound`, their phone) or us (`outbound`, ''). */
type Who = { direction: "inbound"; phone: string } | { direction: "outbound"; phone: "" };
const US: Who = { direction: "outbound", phone: "" };

/** The reaction as an event's `data.reaction` shows it (ours: phone null, as in the record). */
const eventData = (reaction: Reaction, who: Who) => ({ reaction: { reaction, direction: who.direction, phone: who.phone || null } });

/**
 * Puts `reaction` on the message, or (`remove`) takes that person's off (only when it is
 * `reaction`: a late removal of one they replaced changes nothing), with its event, in one
 * transaction. False when nothing changed.
 */
async function applyReaction(storage: Storage, messageId: string, who: Who, reaction: Reaction, remove: boolean): Promise<boolean> {
  return storage.transaction(async (tx) => {
    if (remove) {
      const removed = await tx.messages.unreact(messageId, who.direction, who.phone, who.direction === "inbound" ? reaction : undefined);
      if (removed) await tx.events.append("message.reaction_removed", { messageId, data: eventData(removed, who) });
      return removed !== undefined;
    }
    const added = await tx.messages.react(messageId, who.direction, who.phone, reaction);
    if (added) await tx.events.append("message.reaction_added", { messageId, data: eventData(reaction, who) });
    return added;
  });
}

/** Our reaction standing on a message, if any. */
async function ourReaction(repos: Pick<Repositories, "messages">, id: string): Promise<Reaction | undefined> {
  return (await repos.messages.reactionsOf([id])).get(id)?.find((r) => r.direction === "outbound")?.reaction;
}

/**
 * Reacts to a message of a conversation (ours or theirs): 422 when the network cannot, 404
 * for an unknown id, 409 when the network does not know the message. Ours replaces our
 * previous one; the same one again changes nothing (and asks the network nothing).
 */
export async function reactToMessage(deps: Deps, id: string, reaction: Reaction): Promise<MessageRecord> {
  const row = await messageById(deps.storage, id);
  const react = networkAction(deps.lines.get(row.lineId), "react");
  const target = await targetInChat(deps.storage, row);
  if ((await ourReaction(deps.storage, id)) !== reaction) {
    await react(target, reaction, false);
    await applyReaction(deps.storage, id, US, reaction, false);
  }
  return currentRecord(deps.storage, id);
}

/** Takes our reaction off a message (none: nothing to do); refusals as reactToMessage's. */
export async function removeOurReaction(deps: Deps, id: string): Promise<MessageRecord> {
  const row = await messageById(deps.storage, id);
  const react = networkAction(deps.lines.get(row.lineId), "react");
  const ours = await ourReaction(deps.storage, id);
  if (ours) {
    await react(await targetInChat(deps.storage, row), ours, true);
    await applyReaction(deps.storage, id, US, ours, true);
  }
  return currentRecord(deps.storage, id);
}

/**
 * A reaction the network reported: on the message of that conversation its id names (ours
 * or theirs). One about a message we do not have is ignored. True when it changed something.
 */
export async function applyInboundReaction(storage: Storage, network: string, event: ReactionEvent, log: Logger): Promise<boolean> {
  const { messages } = storage;
  const target =
    (await messages.byNetworkId(network, "outbound", event.targetNetworkId)) ?? (await messages.byNetworkId(network, "inbound", event.targetNetworkId));
  // In a group, any message of that group; else one of the contact's direct chat.
  const group = event.chat ? await storage.chats.byNetworkId(network, event.chat) : undefined;
  if (!target || (event.chat ? !group || target.chatId !== group.id : target.chatId !== null || target.phone !== event.phone)) {
    log.debug("reaction to no message of this conversation ignored", { network, networkId: event.targetNetworkId });
    return false;
  }
  return applyReaction(storage, target.id, { direction: "inbound", phone: event.phone }, event.reaction, event.remove);
}

// What an iPhone sends for a tapback to a phone that is not on iMessage (SMS): the verbs of
// BlueBubbles' reactionTextMap and negativeReactionTextMap (its api/apple/mappings.ts), the
// removals followed by "from" as iOS writes them, then the message in curly or straight quotes.
const ADDED: Record<string, Reaction> = { Loved: "love", Liked: "like", Disliked: "dislike", "Laughed at": "laugh", Emphasized: "emphasize", Questioned: "question" };
const REMOVED: Record<string, Reaction> = {
  "a heart": "love",
  "a like": "like",
  "a dislike": "dislike",
  "a laugh": "laugh",
  "an exclamation": "emphasize",
  "a question mark": "question",
};
const REACTION_TEXT = new RegExp(`^(?:(${Object.keys(ADDED).join("|")})|Removed (${Object.keys(REMOVED).join("|")})(?: from)?) ["“]([^]*)["”]$`);

/** The reaction an SMS reaction text names, and the text it quotes; undefined for any other text. */
export function parseReactionText(text: string): { reaction: Reaction; remove: boolean; quoted: string } | undefined {
  const m = REACTION_TEXT.exec(text.trim());
  if (!m) return undefined;
  return m[1] ? { reaction: ADDED[m[1]]!, remove: false, quoted: m[3]! } : { reaction: REMOVED[m[2]!]!, remove: true, quoted: m[3]! };
}

/** How many of our latest messages to a phone an SMS reaction text may quote. */
const QUOTABLE = 50;

/** Whether `body` is what a reaction text quotes: the same text, or its start when the quote ends cut with an ellipsis. */
function quotes(quoted: string, body: string): boolean {
  const q = quoted.trim();
  const b = body.trim();
  if (q === b) return true;
  const cut = /(?:…|\.\.\.)$/.exec(q);
  return cut !== null && q.length > cut[0].length && b.startsWith(q.slice(0, -cut[0].length));
}

/**
 * An inbound text from `phone` that is an iPhone's SMS reaction (`Loved “…”`) quoting one of
 * our last 50 messages to that phone, applied as a reaction on the newest one it quotes:
 * that message. Undefined when the text is not one, so it is stored as a message.
 */
export async function applyReactionText(storage: Storage, phone: string, text: string): Promise<MessageRow | undefined> {
  const parsed = parseReactionText(text);
  if (!parsed) return undefined;
  const target = (await storage.messages.recentOutbound(phone, QUOTABLE)).find((m) => quotes(parsed.quoted, m.body));
  if (!target) return undefined;
  await applyReaction(storage, target.id, { direction: "inbound", phone }, parsed.reaction, parsed.remove);
  return target;
}
