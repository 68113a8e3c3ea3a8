import type { App } from "../app";
import { databaseTakesWrite } from "../db/client";

export interface Health {
  status: "ok" | "unavailable";
  reason?: string;
}

/** What GET /health answers: 200 when `ok`, 503 when the database does not take a write within 2 s (docs/operations.md). */
export async function checkHealth(app: App): Promise<Health> {
  return (await databaseTakesWrite(app.db)) ? { status: "ok" } : { status: "unavailable", reason: "database" };
}
