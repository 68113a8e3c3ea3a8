import type { Database } from "bun:sqlite";
import type { GenerationRepository, GenerationRow } from "../port";
import type { Sync } from "./gate";

/** The generations table. */
export function sqliteGenerations(sqlite: Database): Sync<GenerationRepository> {
  const insert = sqlite.prepare<never, [Omit<GenerationRow, "messageId">]>(
    `INSERT INTO generations (id, phone, body, model, language, created_at) VALUES ($id, $phone, $body, $model, $language, $createdAt)`,
  );
  const setMessage = sqlite.prepare<never, [{ id: string; messageId: string }]>(`UPDATE generations SET message_id = $messageId WHERE id = $id`);
  return {
    insert: (generation) => void insert.run(generation),
    setMessage: (id, messageId) => void setMessage.run({ id, messageId }),
  };
}
