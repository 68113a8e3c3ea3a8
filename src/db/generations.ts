import { declare, get, run, sql } from "./sql";

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
  /** Stores it at the database's clock (every process reads one clock); returns that time in ms. */
  insert(generation: Omit<GenerationRow, "messageId" | "createdAt">): Promise<number>;
  /** Notes the message that sent the reply. */
  setMessage(id: string, messageId: string): Promise<void>;
}

const insert = sql<{ createdAt: number | string }>(
  "generations.insert",
  `INSERT INTO generations (id, phone, body, model, language, created_at) VALUES ($id, $phone, $body, $model, $language, {now_ms}) RETURNING created_at AS "createdAt"`,
);
const setMessage = sql("generations.setMessage", `UPDATE generations SET message_id = $messageId WHERE id = $id`);

export const generations = declare<GenerationRepository>()({
  insert: get(insert, (g) => ({ id: g.id, phone: g.phone, body: g.body, model: g.model, language: g.language }), (row) => Number(row!.createdAt)),
  setMessage: run(setMessage, (id, messageId) => ({ id, messageId })),
});
