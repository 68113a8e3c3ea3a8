import { writeOrRetry } from "../background";
import { AppError } from "../errors";
import { errorText, type Logger } from "../log";
import type { NetworkDriver } from "../network";
import { SendOutcomeUnknown, type OptOutType } from "../network/driver";
import type { Claim, MessageRepository, NewMessage, RecordRow, Storage } from "../db/port";
import { MAX_PAGE, type MessageRecord } from "./schemas";
import { isoTime } from "./time";

export interface MessagingDeps {
  storage: Storage;
  network: NetworkDriver;
  log: Logger;
}

/** With an idempotency key: the claim, and the answer the request gives once sent. */
export interface IdempotentSend {
  claim: Claim;
  answer: (record: MessageRecord) => unknown;
}

/** The answer of POST /api/send. */
export const sentAnswer = (record: MessageRecord) => ({ success: true, message_id: record.id, timestamp: record.timestamp, status: record.status });

export function toRecord(row: RecordRow): MessageRecord {
  const record: MessageRecord = {
    id: row.id,
    phone: row.phone,
    message: row.body,
    direction: row.direction,
    timestamp: isoTime(row.timestamp),
    status: row.status,
  };
  if (row.error) record.error = row.error;
  return record;
}

/** The answer to a send whose outcome is unknown (504, with the message's id). */
export const UNKNOWN_OUTCOME = "network: no answer in time; the status will follow";

/**
 * Sends a text: stored `queued` first so a crash never loses it, then handed to the
 * network. A refusal leaves it `failed` in history and throws BAD_GATEWAY. When the
 * outcome is unknown it stays `queued` and GATEWAY_TIMEOUT names the message. Once the
 * network took it, the send succeeded: a status that cannot be written now (a busy
 * database) is written in the background until it lands.
 */
export async function sendMessage(
  deps: MessagingDeps,
  input: { phone: string; message: string },
  idempotent?: IdempotentSend,
): Promise<MessageRecord> {
  const message: NewMessage = {
    id: Bun.randomUUIDv7(),
    phone: input.phone,
    body: input.message,
    direction: "outbound",
    status: "queued",
    network: deps.network.name,
    networkId: null,
  };
  const { storage } = deps;
  // With a key, the key names its message in the same transaction: a retry finds one or the other, never half.
  const { row } = idempotent
    ? await storage.transaction(async (tx) => {
        const stored = await tx.messages.insert(message);
        await tx.idempotency.attach(idempotent.claim, stored.row.id, JSON.stringify(idempotent.answer(toRecord(stored.row))));
        return stored;
      })
    : await storage.messages.insert(message);
  let result: Awaited<ReturnType<NetworkDriver["send"]>>;
  try {
    result = await deps.network.send({ id: row.id, phone: row.phone, text: row.body });
  } catch (err) {
    if (err instanceof SendOutcomeUnknown) {
      // The message may still go out: it stays queued until the network's report or a
      // reconciliation settles it (docs/networks.md). An echo may already have done so.
      const now = await storage.messages.get(row.id);
      if (now && (now.status === "sent" || now.status === "delivered")) return toRecord(now);
      throw new AppError("GATEWAY_TIMEOUT", UNKNOWN_OUTCOME, {}, { message_id: row.id });
    }
    const reason = errorText(err);
    await recordStatus(deps, row.id, () => storage.messages.setStatus(row.id, "failed", { error: reason }));
    // A driver's AppError says what went wrong (an invalid recipient, the network's rate limit).
    if (err instanceof AppError) throw err;
    throw new AppError("BAD_GATEWAY", `the ${deps.network.name} network did not take the message: ${reason}`);
  }
  let moved = false;
  const recorded = await recordStatus(deps, row.id, async () => {
    moved = await storage.messages.setStatus(row.id, result.status, { networkId: result.networkId ?? null });
  });
  // Moved: the record is the stored row with the network's status, no need to read it back.
  // Not moved: a status report got there first; answer what it wrote.
  const settled = recorded && !moved ? await storage.messages.get(row.id) : undefined;
  return toRecord(settled ?? { ...row, status: result.status });
}

/** Writes a send's status now, or else in the background until it lands; true when written now. */
function recordStatus(deps: MessagingDeps, id: string, write: () => Promise<unknown>): Promise<boolean> {
  return writeOrRetry("recording a send's status", write, deps.log.child({ messageId: id }));
}

/** Stores a message the network delivered to us; the same network id twice stores it once. */
export async function recordInbound(
  messages: MessageRepository,
  network: string,
  input: { phone: string; message: string; networkId?: string; optOutType?: OptOutType },
): Promise<{ record: MessageRecord; duplicate: boolean }> {
  const { row, created } = await messages.insert({
    id: Bun.randomUUIDv7(),
    phone: input.phone,
    body: input.message,
    direction: "inbound",
    status: "received",
    network,
    networkId: input.networkId ?? null,
    optOutType: input.optOutType ?? null,
  });
  return { record: toRecord(row), duplicate: !created };
}

/** One contact's messages, newest first; `limit` is clamped to 100. */
export async function listHistory(messages: MessageRepository, input: { phone: string; limit: number; offset: number }) {
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = await messages.history(input.phone, limit, input.offset);
  return { messages: rows.map(toRecord), total, limit, offset: input.offset };
}

/** Inbound messages after `since` (exclusive; omitted: from the first), oldest first. */
export async function pollInbound(messages: MessageRepository, input: { since?: number; phone?: string; limit: number }) {
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, hasMore } = await messages.inboundAfter(input.since ?? -1, limit, input.phone);
  return { messages: rows.map(toRecord), count: rows.length, has_more: hasMore };
}
