import type { MediaRow, MessageRepository, RecordRow } from "../db/port";
import type { MessageRecord } from "./schemas";
import { isoTime } from "./time";

/** One empty list for every record without files: a page of 100 records allocates none. */
const NO_MEDIA: MessageRecord["media"] = [];
Object.freeze(NO_MEDIA);

/** A message's record; `media`: its media rows (none given: none shown), see `toRecords`. */
export function toRecord(row: RecordRow, media: readonly MediaRow[] = []): MessageRecord {
  const record: MessageRecord = {
    id: row.id,
    phone: row.phone,
    message: row.body,
    direction: row.direction,
    timestamp: isoTime(row.timestamp),
    status: row.status,
    reply_to: row.replyTo,
    media: media.length === 0 ? NO_MEDIA : media.map((m) => ({ id: m.id, content_type: m.contentType, size: m.size, url: `/api/media/${m.id}` })),
  };
  if (row.error) record.error = row.error;
  if (row.sendAt !== null) record.send_at = isoTime(row.sendAt * 1000);
  return record;
}

/** The records of a page: its media read in one query, and only when a row has some. */
export async function toRecords(messages: MessageRepository, rows: readonly RecordRow[]): Promise<MessageRecord[]> {
  const withMedia = rows.filter((row) => row.mediaCount > 0).map((row) => row.id);
  if (withMedia.length === 0) return rows.map((row) => toRecord(row));
  const media = await messages.mediaOf(withMedia);
  return rows.map((row) => toRecord(row, media.get(row.id)));
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
