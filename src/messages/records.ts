import type { MediaRow, MessageRepository, ReactionRow, RecordRow } from "../db/port";
import { directChatId } from "../vocabulary/chats";
import type { MessageRecord } from "./schemas";
import { isoTime } from "./time";

/** One empty list for every record without files (or reactions): a page of 100 records allocates none. */
const NO_MEDIA: MessageRecord["media"] = [];
Object.freeze(NO_MEDIA);
const NO_REACTIONS: MessageRecord["reactions"] = [];
Object.freeze(NO_REACTIONS);

/** A time in ms as records show it, null as null. */
const msTime = (ms: number | null) => (ms === null ? null : isoTime(ms * 1000));

/** A message's record; `media` and `reactions`: its rows (none given: none shown), see `toRecords`. */
export function toRecord(row: RecordRow, media: readonly MediaRow[] = [], reactions: readonly ReactionRow[] = []): MessageRecord {
  const record: MessageRecord = {
    id: row.id,
    // In a group our messages have no phone ('' stored): the chat is the recipient.
    phone: row.phone === "" ? null : row.phone,
    message: row.body,
    direction: row.direction,
    timestamp: isoTime(row.timestamp),
    status: row.status,
    reply_to: row.replyTo,
    media: media.length === 0 ? NO_MEDIA : media.map((m) => ({ id: m.id, content_type: m.contentType, size: m.size, url: `/api/media/${m.id}` })),
    reactions:
      reactions.length === 0
        ? NO_REACTIONS
        : reactions.map((r) => ({ reaction: r.reaction, direction: r.direction, phone: r.direction === "outbound" ? null : r.phone, timestamp: isoTime(r.createdAt * 1000) })),
    read_at: msTime(row.readAt),
    edited_at: msTime(row.editedAt),
    unsent_at: msTime(row.unsentAt),
    chat_id: row.chatId ?? directChatId(row.phone),
    line_id: row.lineId,
  };
  if (row.error) record.error = row.error;
  if (row.sendAt !== null) record.send_at = isoTime(row.sendAt * 1000);
  return record;
}

/** The records of a page: its media and its reactions each read in one query, and only when a row has some. */
export async function toRecords(messages: Pick<MessageRepository, "mediaOf" | "reactionsOf">, rows: readonly RecordRow[]): Promise<MessageRecord[]> {
  const withMedia = rows.filter((row) => row.mediaCount > 0).map((row) => row.id);
  const withReactions = rows.filter((row) => row.reactionCount > 0).map((row) => row.id);
  if (withMedia.length === 0 && withReactions.length === 0) return rows.map((row) => toRecord(row));
  const [media, reactions] = await Promise.all([
    withMedia.length > 0 ? messages.mediaOf(withMedia) : undefined,
    withReactions.length > 0 ? messages.reactionsOf(withReactions) : undefined,
  ]);
  return rows.map((row) => toRecord(row, media?.get(row.id), reactions?.get(row.id)));
}

/** The answer to a send: POST /api/send's, a workflow's keyed send's, stored for replay with its key. */
export interface SendAnswer {
  success: true;
  message_id: string;
  timestamp: string;
  status: MessageRecord["status"];
}

export const sendAnswer = (record: MessageRecord): SendAnswer => ({ success: true, message_id: record.id, timestamp: record.timestamp, status: record.status });

/** The answer of POST /api/generate; `message_id`: the sent message's when sent, else the stored generation's. */
export const generatedAnswer = (text: string, messageId: string, sent: boolean, timestamp: string) => ({
  success: true,
  generated_message: text,
  message_id: messageId,
  sent,
  timestamp,
});

/** The answer of GET /api/messages/{phone} and GET /api/messages/scheduled: a page and how many there are in all. */
export const pageAnswer = (messages: MessageRecord[], total: number, limit: number, offset: number) => ({ success: true, messages, total, limit, offset });

/** The answer of GET /api/messages/poll. */
export const pollAnswer = (messages: MessageRecord[], hasMore: boolean) => ({ success: true, messages, count: messages.length, has_more: hasMore });

/** The answer of POST /api/messages/{id}/cancel. */
export const canceledAnswer = (message: MessageRecord) => ({ success: true, message });

/** The answer of POST /webhooks/loopback. */
export const inboundAnswer = (record: MessageRecord) => ({ success: true, message_id: record.id, timestamp: record.timestamp });
