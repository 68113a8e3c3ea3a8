import type { GenerationRepository } from "../port";
import { statement, type Run } from "./sql";

const insert = statement(
  "generations.insert",
  `INSERT INTO generations (id, phone, body, model, language, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
);
const setMessage = statement("generations.setMessage", `UPDATE generations SET message_id = $2 WHERE id = $1`);

/** The generations table. */
export function postgresGenerations(run: Run): GenerationRepository {
  return {
    insert: async (g) => void (await run(insert, [g.id, g.phone, g.body, g.model, g.language, g.createdAt])),
    setMessage: async (id, messageId) => void (await run(setMessage, [id, messageId])),
  };
}
