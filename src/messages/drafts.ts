import { AppError } from "../errors";
import type { MessageRow } from "../db/port";
import { pageAnswer, toRecords } from "./records";
import { MAX_PAGE, type MessageRecord } from "./schemas";
import { decideSend } from "./send-policy";
import { sendStored, type MessagingDeps } from "./service";
import { directChatId } from "../vocabulary/chats";

/** GET /api/drafts: the drafts waiting for a person, oldest first; `limit` clamped to 100. */
export async function listDrafts(deps: Pick<MessagingDeps, "storage">, input: { limit: number; offset: number }) {
  const { messages } = deps.storage;
  const limit = Math.min(input.limit, MAX_PAGE);
  const { rows, total } = await messages.drafts(limit, input.offset);
  const { messages: drafts } = pageAnswer(await toRecords(messages, rows), total, limit, input.offset);
  return { success: true, drafts, total, limit, offset: input.offset };
}

/** The draft `id` names: 404 when no message, 409 when it is not (or no longer) a draft. */
async function draftById(deps: Pick<MessagingDeps, "storage">, id: string, verb: string): Promise<MessageRow> {
  const row = await deps.storage.messages.get(id);
  if (!row) throw new AppError("NOT_FOUND", `message ${id} not found`);
  if (row.status !== "draft") throw notADraft(id, row.status, verb);
  return row;
}

const notADraft = (id: string, status: string, verb: string) => new AppError("CONFLICT", `message ${id} is ${status}; only a draft can be ${verb}`);

const recordOf = async (deps: Pick<MessagingDeps, "storage">, row: MessageRow) => (await toRecords(deps.storage.messages, [row]))[0]!;

/**
 * POST /api/messages/{id}/approve: a person sends the draft (edited to `message` when given).
 * The same record leaves `draft` in one conditional UPDATE (only one approval wins; a retried
 * one finds no draft: 409), with event `message.approved` (`by`), then goes to the network as
 * any send (sendStored); a draft with a `send_at` still ahead becomes `scheduled`. The
 * approval is a person's send: a contact that opted out since refuses it (403) and it stays a draft.
 */
export async function approveDraft(deps: MessagingDeps, id: string, edited: string | undefined, by: string | null): Promise<MessageRecord> {
  const draft = await draftById(deps, id, "approved");
  const { storage } = deps;
  const direct = draft.chatId === null;
  const contact = direct ? await storage.contacts.beforeSend(draft.phone) : { optedOut: false, ourTyping: false };
  const chatId = draft.chatId ?? directChatId(draft.phone);
  const verdict = decideSend({ automated: false, group: !direct, optedOut: contact.optedOut, muted: false, mode: await storage.chats.modeOf(chatId) });
  if (verdict.action !== "send") throw "error" in verdict ? verdict.error : new AppError("CONFLICT", `message ${id} cannot be approved now`);
  const to = draft.sendAt !== null && draft.sendAt > Date.now() ? "scheduled" : "queued";
  const approved = await storage.transaction(async (tx) => {
    const row = await tx.messages.approveDraft(id, to, edited ?? null);
    if (!row) return undefined;
    await tx.events.append("message.approved", { messageId: id, data: { by } });
    return row;
  });
  if (!approved) throw notADraft(id, (await storage.messages.get(id))?.status ?? "gone", "approved");
  deps.metrics?.message("outbound", approved.network, approved.status);
  if (approved.status === "scheduled") return recordOf(deps, approved);
  return sendStored(deps, approved, contact.ourTyping);
}

/** POST /api/messages/{id}/reject: the draft becomes `rejected` (final, never sent), with event `message.rejected` (`by`). */
export async function rejectDraft(deps: Pick<MessagingDeps, "storage">, id: string, by: string | null): Promise<MessageRecord> {
  await draftById(deps, id, "rejected");
  const rejected = await deps.storage.transaction(async (tx) => {
    const row = await tx.messages.rejectDraft(id);
    if (row) await tx.events.append("message.rejected", { messageId: id, data: { by } });
    return row;
  });
  if (!rejected) throw notADraft(id, (await deps.storage.messages.get(id))?.status ?? "gone", "rejected");
  return recordOf(deps, rejected);
}
