import type { App } from "../app";
import { generateReply } from "../generator/service";
import { fingerprint, runIdempotent } from "../messages/idempotency";
import type { MessageRecord } from "../messages/schemas";
import { listHistory, pollInbound, sendMessage } from "../messages/service";
import type { ContextTurn } from "./define";

/** The messaging operations a workflow run uses, whether the messages live here or on a remote server (./remote-backend.ts). */
export interface MessagingBackend {
  readonly hasGenerator: boolean;
  poll(input: { since: number; phone?: string; limit: number }): Promise<{ messages: MessageRecord[]; hasMore: boolean }>;
  history(input: { phone: string; limit: number; offset: number }): Promise<{ messages: MessageRecord[]; total: number }>;
  generate(input: { phone: string; context: ContextTurn[]; instructions?: string; language?: string }, signal: AbortSignal): Promise<{ id: string; text: string }>;
  /** Whether the contact opted out. */
  optedOut(phone: string): Promise<boolean>;
  /**
   * Sends once per key: a second call with the same key returns the first send
   * (`replayed`). With `anyText`, the key alone decides, whatever the text.
   */
  send(
    input: { phone: string; message?: string; media?: { url: string }[]; reply_to?: string },
    idempotency?: { key: string; anyText: boolean },
  ): Promise<{ record: Pick<MessageRecord, "id" | "timestamp" | "status"> & Partial<Pick<MessageRecord, "media">>; replayed: boolean }>;
}

/** Workflows' idempotency keys live apart from API keys' ones. */
const WORKFLOW_SCOPE = "workflows";
/** How long a reply's key stays locked by a run that stored nothing yet. */
const SEND_LOCK_MS = 60_000;

/** The backend over this process's own service functions (never HTTP to itself). */
export function createLocalBackend(app: App): MessagingBackend {
  return {
    hasGenerator: app.generator !== null,
    async poll({ since, phone, limit }) {
      const page = await pollInbound(app.storage.messages, { since, phone, limit });
      return { messages: page.messages, hasMore: page.has_more };
    },
    async history(input) {
      const page = await listHistory(app.storage.messages, input);
      return { messages: page.messages, total: page.total };
    },
    async generate(input, signal) {
      const reply = await generateReply(app, input, { signal });
      return { id: reply.id, text: reply.text };
    },
    async optedOut(phone) {
      return (await app.storage.contacts.get(phone))?.optedOut ?? false;
    },
    async send(input, idempotency) {
      if (!idempotency) {
        const { id, timestamp, status, media } = await sendMessage(app, input);
        return { record: { id, timestamp, status, media }, replayed: false };
      }
      const print = fingerprint("send", idempotency.anyText ? { phone: input.phone } : input);
      const answer = (r: MessageRecord) => ({ id: r.id, timestamp: r.timestamp, status: r.status });
      const { answer: record, replayed } = await runIdempotent(
        app.storage,
        { scope: WORKFLOW_SCOPE, key: idempotency.key },
        print,
        SEND_LOCK_MS,
        async (claim) => answer(await sendMessage(app, input, { claim, answer })),
        app.log,
      );
      return { record, replayed };
    },
  };
}
