import { z } from "zod";
import type { MessageRow, Repositories } from "../db/port";
import { AppError } from "../errors";
import { errorText } from "../log";
import type { Line, LineRegistry } from "../lines/registry";
import type { MessageTarget, NetworkDriver } from "../network/driver";
import { directChatId } from "../vocabulary/chats";
import { CAPABILITIES, type Capability } from "../vocabulary/network";
import { toRecords } from "./records";
import type { MessageRecord } from "./schemas";

type Action = "react" | "typing" | "markRead" | "edit" | "unsend" | "createGroup" | "renameGroup" | "setParticipant";

/** For each action: the capability it needs, the field a refusal names and what the network cannot do. */
const ACTIONS: Record<Action, { capability: Capability; field: string; cannot: string }> = {
  react: { capability: "reactions", field: "reaction", cannot: "send reactions" },
  typing: { capability: "typing", field: "typing", cannot: "show typing" },
  markRead: { capability: "read_receipts", field: "read", cannot: "send read receipts" },
  edit: { capability: "edit", field: "message", cannot: "edit messages" },
  unsend: { capability: "unsend", field: "unsend", cannot: "unsend messages" },
  createGroup: { capability: "groups", field: "participants", cannot: "do group chats" },
  renameGroup: { capability: "groups", field: "name", cannot: "do group chats" },
  setParticipant: { capability: "groups", field: "phone", cannot: "do group chats" },
};

/** Whether the network can do `action` (its capability and its driver's method). */
export const canDo = (network: NetworkDriver, action: Action) => network.capabilities[ACTIONS[action].capability] && network[action] !== undefined;

/**
 * The `action` of the line's network, checked before anything changes: 422
 * UNPROCESSABLE_CONTENT naming the field, the network and the line when it cannot. A failure
 * of the call keeps an AppError's code (422 when the network cannot now) and is BAD_GATEWAY
 * naming the network otherwise.
 */
export function networkAction<A extends Action>(
  line: Line,
  action: A,
): (...args: Parameters<NonNullable<NetworkDriver[A]>>) => Promise<Awaited<ReturnType<NonNullable<NetworkDriver[A]>>>> {
  const { field, cannot } = ACTIONS[action];
  const network = line.driver;
  if (!canDo(network, action)) throw new AppError("UNPROCESSABLE_CONTENT", `${field}: the ${network.name} network cannot ${cannot} (line ${line.row.name})`);
  const method = network[action] as (...args: unknown[]) => Promise<never>;
  return async (...args) => {
    try {
      return await method.apply(network, args);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError("BAD_GATEWAY", `${field}: the ${network.name} network failed (line ${line.row.name}): ${errorText(err)}`);
    }
  };
}

/** The line of the conversation with `phone`: its direct chat's (its last message's), else the default line. */
export async function contactLine(deps: { storage: Pick<Repositories, "chats">; lines: LineRegistry }, phone: string): Promise<Line> {
  const chat = await deps.storage.chats.get(directChatId(phone));
  return (chat && deps.lines.find(chat.lineId)) ?? deps.lines.default();
}

/** The message `id` names, or 404. */
export async function messageById(repos: Pick<Repositories, "messages">, id: string): Promise<MessageRow> {
  const row = await repos.messages.get(id);
  if (!row) throw new AppError("NOT_FOUND", `message ${id} not found`);
  return row;
}

/** The message as the network knows it, or 409 when it has no network id (never sent, or received without one). */
export function targetOf(row: MessageRow): MessageTarget {
  if (!row.networkId) throw new AppError("CONFLICT", `message ${row.id} is not on the network (it has no network id)`);
  return { networkId: row.networkId, phone: row.phone };
}

/** targetOf, with the group's network id when the message is in a group chat (a reaction names the chat). */
export async function targetInChat(repos: Pick<Repositories, "chats">, row: MessageRow): Promise<MessageTarget> {
  const target = targetOf(row);
  const chat = row.chatId === null ? undefined : (await repos.chats.get(row.chatId))?.networkId;
  return chat ? { ...target, chat } : target;
}

/** The record of a message as it is now. */
export async function currentRecord(repos: Pick<Repositories, "messages">, id: string): Promise<MessageRecord> {
  return (await toRecords(repos.messages, [await messageById(repos, id)]))[0]!;
}

export const networkOutput = z.object({
  success: z.boolean(),
  network: z
    .object({
      name: z.string().meta({ description: "The default line's network: loopback, twilio, bluebubbles or android (GET /api/lines lists every line).", example: "bluebubbles" }),
      capabilities: z
        .object(Object.fromEntries(CAPABILITIES.map((c) => [c, z.boolean()])) as Record<Capability, z.ZodBoolean>)
        .meta({ description: "What the network can do: reactions (tapbacks), typing indicators, read receipts, edits and unsends of our messages, group chats, media, threaded replies." }),
    })
    .meta({ id: "Network" }),
});

/** The default line's network as GET /api/network shows it. */
export const networkInfo = (line: Line) => ({ name: line.driver.name, capabilities: { ...line.driver.capabilities } });
