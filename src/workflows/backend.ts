import type { App } from "../app";
import { generateReply } from "../generator/service";
import { isChatMuted, listChatMessages } from "../messages/chats";
import { fingerprint, runIdempotent } from "../messages/idempotency";
import type { MessageRecord } from "../messages/schemas";
import type { SendAnswer } from "../messages/records";
import { reactToMessage } from "../messages/reactions";
import { markConversationRead } from "../messages/read-state";
import { networkInfo } from "../messages/network-actions";
import { listHistory, pollInbound, sendAnswered, sendMessage } from "../messages/service";
import { isContactTyping, setOurTyping } from "../messages/typing";
import type { Reaction } from "../vocabulary/reactions";
import type { ChatMode, SkipReason } from "../vocabulary/chat-modes";
import { AppError } from "../errors";
import { skipReasonOf } from "../messages/send-policy";
import type { ContextTurn, NetworkInfo } from "./define";

/** The messaging operations a workflow run uses, whether the messages live here or on a remote server (./remote-backend.ts). */
export interface MessagingBackend {
  readonly hasGenerator: boolean;
  /** `chats` "all": group messages too, under the same cursor. */
  poll(input: { since: number; phone?: string; limit: number; chats: "direct" | "all" }): Promise<{ messages: MessageRecord[]; hasMore: boolean }>;
  history(input: { phone: string; limit: number; offset: number }): Promise<{ messages: MessageRecord[]; total: number }>;
  chatHistory(input: { id: string; limit: number; offset: number }): Promise<{ messages: MessageRecord[]; total: number }>;
  /** Whether automated sends into the chat wait (a STOP there). */
  chatMuted(chatId: string): Promise<boolean>;
  /** The modes of these chats (docs/supervision.md); a chat left out is not known. */
  chatModes(chatIds: readonly string[]): Promise<Map<string, ChatMode>>;
  generate(input: { phone: string; context: ContextTurn[]; instructions?: string; language?: string }, signal: AbortSignal): Promise<{ id: string; text: string }>;
  /** Whether the contact opted out. */
  optedOut(phone: string): Promise<boolean>;
  /** The network and its capabilities, read once per run. */
  network(): Promise<NetworkInfo>;
  react(id: string, reaction: Reaction): Promise<MessageRecord>;
  typing(phone: string, on: boolean): Promise<void>;
  markRead(phone: string): Promise<void>;
  /** Whether the contact is typing now. */
  isTyping(phone: string): Promise<boolean>;
  /**
   * An automated send (src/messages/send-policy.ts decides: sent, drafted, or skipped with
   * its reason, nothing stored), once per key: a second call with the same key returns the
   * first send (`replayed`). With `anyText`, the key alone decides, whatever the text.
   */
  send(
    input: ({ phone: string; chat_id?: undefined } | { chat_id: string; phone?: undefined }) & { message?: string; media?: { url: string }[]; reply_to?: string },
    idempotency?: { key: string; anyText: boolean },
  ): Promise<{ record: Pick<MessageRecord, "id" | "timestamp" | "status"> & Partial<Pick<MessageRecord, "media">>; replayed: boolean } | { skipped: SkipReason }>;
}

/** A send refused by policy, here or by a remote server (its error's `reason`), as a skip; any other error is thrown again. */
export function skippedOr(err: unknown, details: { reason?: string } | undefined = err instanceof AppError ? err.details : undefined): { skipped: SkipReason } {
  const skipped = skipReasonOf(details);
  if (!skipped) throw err;
  return { skipped };
}

/** Workflows' idempotency keys live apart from API keys' ones. */
const WORKFLOW_SCOPE = "workflows";
/** How long a reply's key stays locked by a run that stored nothing yet. */
const SEND_LOCK_MS = 60_000;

/** The backend over this process's own service functions (never HTTP to itself). */
export function createLocalBackend(app: App): MessagingBackend {
  return {
    hasGenerator: app.generator !== null,
    async poll(input) {
      const page = await pollInbound(app, input);
      return { messages: page.messages, hasMore: page.has_more };
    },
    async history(input) {
      const page = await listHistory(app, input);
      return { messages: page.messages, total: page.total };
    },
    async chatHistory(input) {
      const page = await listChatMessages(app.storage, input);
      return { messages: page.messages, total: page.total };
    },
    chatMuted: (chatId) => isChatMuted(app.storage, chatId),
    chatModes: (chatIds) => app.storage.chats.modes(chatIds),
    async generate(input, signal) {
      const reply = await generateReply(app, input, { signal });
      return { id: reply.message_id, text: reply.generated_message };
    },
    async optedOut(phone) {
      return (await app.storage.contacts.get(phone))?.optedOut ?? false;
    },
    async network() {
      return networkInfo(app.lines.default());
    },
    react: (id, reaction) => reactToMessage(app, id, reaction),
    async typing(phone, on) {
      await setOurTyping(app, phone, on);
    },
    async markRead(phone) {
      await markConversationRead(app, phone);
    },
    isTyping: (phone) => isContactTyping(app.storage, phone),
    async send(input, idempotency) {
      const automated = { ...input, automated: true };
      try {
        if (!idempotency) {
          const { id, timestamp, status, media } = await sendMessage(app, automated);
          return { record: { id, timestamp, status, media }, replayed: false };
        }
        const print = fingerprint("send", idempotency.anyText ? (input.chat_id === undefined ? { phone: input.phone } : { chat_id: input.chat_id }) : input);
        const claim = { scope: WORKFLOW_SCOPE, key: idempotency.key };
        const { answer, replayed } = await runIdempotent(app.storage, claim, print, SEND_LOCK_MS, (taken) => sendAnswered(app, automated, taken), app.log);
        return { record: sentRecord(answer), replayed };
      } catch (err) {
        return skippedOr(err);
      }
    },
  };
}

/**
 * A send's answer (src/messages/records.ts) as a workflow's record, from this server or a remote one. A server
 * older than `status` answered only once the network took the message; a workflow's key stored before its
 * answers took this shape (kept 24 h) named the message `id`.
 */
export function sentRecord(answer: Pick<SendAnswer, "timestamp"> & Partial<Pick<SendAnswer, "status">> & ({ message_id: string } | { id: string })) {
  return { id: "message_id" in answer ? answer.message_id : answer.id, timestamp: answer.timestamp, status: answer.status ?? "sent" };
}
