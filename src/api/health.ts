import type { App } from "../app";

export interface Health {
  status: "ok" | "unavailable";
  reason?: string;
}

/** What GET /health answers: 200 when `ok`, 503 when the database does not take a write within 2 s (docs/operations.md). */
export async function checkHealth(app: App): Promise<Health> {
  return (await app.storage.takesWrite()) ? { status: "ok" } : { status: "unavailable", reason: "database" };
}

/**
 * What GET /health/ready answers: 503 from the moment a shutdown begins (load balancers stop
 * sending; docs/operations.md), else as /health. Migrations are applied before the server listens.
 */
export async function checkReadiness(app: App, stopping: boolean): Promise<Health> {
  return stopping ? { status: "unavailable", reason: "shutting down" } : checkHealth(app);
}
