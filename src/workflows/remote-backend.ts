import { TRPCClientError } from "@trpc/client";
import { createClient, type ResponseInfo, type TextwireClient } from "../client";
import type { Config } from "../config";
import { AppError, type ErrorCode, type ErrorDetails } from "../errors";
import { isoTime } from "../messages/time";
import { MESSAGE_STATUSES, type MessageStatus } from "../vocabulary/message-status";
import { remoteCall } from "../remote-call";
import { sentRecord, skippedOr, type MessagingBackend } from "./backend";
import { CHAT_MODES, type ChatMode } from "../vocabulary/chat-modes";

// With src/mcp/stdio.ts, the only modules that import src/client.ts: the client's types come from the router, which must not reach it back.

/** The backend of TEXTWIRE_URL (a worker's, or the CLI's workflow commands'); undefined without it. */
export function configuredRemoteBackend(config: Pick<Config, "TEXTWIRE_URL" | "TEXTWIRE_API_KEY">): MessagingBackend | undefined {
  const { TEXTWIRE_URL: url, TEXTWIRE_API_KEY: apiKey } = config;
  return url && apiKey ? createRemoteBackend(createClient({ url, apiKey }), url) : undefined;
}

/**
 * The backend of a worker that runs apart from the API, against a Textwire server
 * elsewhere, through the typed tRPC client. Workflow bookkeeping stays in the local database.
 */
export function createRemoteBackend(client: TextwireClient, url?: string): MessagingBackend {
  const asLocal = <T>(call: () => Promise<T>): Promise<T> => remoteCall(call, url);
  return {
    // The server answers 503 to generate when it has no generator; the run then fails clearly.
    hasGenerator: true,
    async poll({ since, phone, limit, chats }) {
      // The default stays the server's: one older than group chats refuses a `chats` it does not know.
      const page = await client.messages.poll.query({ since: since > 0 ? isoTime(since) : undefined, phone, limit, ...(chats === "all" ? { chats } : {}) });
      return { messages: page.messages, hasMore: page.has_more };
    },
    async history(input) {
      const page = await client.messages.history.query(input);
      return { messages: page.messages, total: page.total };
    },
    async chatHistory(input) {
      const page = await client.chats.messages.query(input);
      return { messages: page.messages, total: page.total };
    },
    // GET /api/chats/{id} says whether a group is muted (docs/workflows.md, Group chats).
    chatMuted: async (id) => (await client.chats.get.query({ id })).chat.muted,
    // A server older than chat modes shows none: its chats are all automated.
    async chatModes(ids) {
      const chats = await Promise.all(ids.map((id) => client.chats.get.query({ id }).then(({ chat }) => chat)));
      return new Map(chats.map((chat): [string, ChatMode] => [chat.id, (CHAT_MODES as readonly unknown[]).includes(chat.mode) ? chat.mode : "auto"]));
    },
    async generate(input, signal) {
      const reply = await client.messages.generate.mutate(input, { signal });
      return { id: reply.message_id, text: reply.generated_message };
    },
    async optedOut(phone) {
      return (await client.contacts.get.query({ phone })).contact.opted_out;
    },
    async network() {
      return (await client.network.get.query()).network;
    },
    react: (id, reaction) => asLocal(async () => (await client.messages.react.mutate({ id, reaction })).message),
    typing: (phone, on) => asLocal(async () => void (await (on ? client.contacts.startTyping : client.contacts.stopTyping).mutate({ phone }))),
    markRead: (phone) => asLocal(async () => void (await client.contacts.markRead.mutate({ phone }))),
    isTyping: (phone) => asLocal(async () => (await client.contacts.get.query({ phone })).contact.typing),
    async send(input, idempotency) {
      const response: ResponseInfo = {};
      try {
        const sent = await client.messages.send.mutate({ ...input, automated: true }, { context: { idempotencyKey: idempotency?.key, response } });
        return { record: sentRecord(sent), replayed: response.replayed === true };
      } catch (err) {
        // The server keys on the whole request; for a reply the key alone decides, so a key
        // already used for another text of an answered reply is that reply, replayed.
        const data = err instanceof TRPCClientError ? (err.data as Partial<ErrorDetails> & { code?: string } | undefined) : undefined;
        if (idempotency?.anyText && data?.code === "CONFLICT" && data.reason === "IDEMPOTENCY_KEY_REUSED" && data.message_id && data.timestamp && isStatus(data.status)) {
          return { record: { id: data.message_id, timestamp: data.timestamp, status: data.status }, replayed: true };
        }
        // Refused by policy (an opt-out, a muted group, a human chat): skipped, as by the local backend.
        if (data?.reason) return skippedOr(err, data);
        // Any other refusal: the same error as from the local backend (isOptedOut).
        if (data?.code === "FORBIDDEN") throw new AppError("FORBIDDEN", (err as Error).message);
        throw err;
      }
    },
  };
}

const isStatus = (s: unknown): s is MessageStatus => typeof s === "string" && (MESSAGE_STATUSES as readonly string[]).includes(s);
