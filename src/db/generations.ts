import { declare, run, sql } from "./sql";

/** A generated reply, sent or not. */
export interface GenerationRow {
  id: string;
  phone: string;
  body: string;
  model: string;
  language: string | null;
  createdAt: number;
  /** The sent message, when the reply was sent. */
  messageId: string | null;
}

export interface GenerationRepository {
  insert(generation: Omit<GenerationRow, "messageId">): Promise<void>;
  /** Notes the message that sent the reply. */
  setMessage(id: string, messageId: string): Promise<void>;
}

const insert = sql("generations.insert", `INSERT INTO generations (id, phone, body, model, language, created_at) VALUES ($id, $phone, $body, $model, $language, $createdAt)`);
const setMessage = sql("generations.setMessage", `UPDATE generations SET message_id = $messageId WHERE id = $id`);

export const generations = declare<GenerationRepository>()({
  insert: run(insert, (g) => ({ id: g.id, phone: g.phone, body: g.body, model: g.model, language: g.language, createdAt: g.createdAt })),
  setMessage: run(setMessage, (id, messageId) => ({ id, messageId })),
});
