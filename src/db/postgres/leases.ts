import type { LeaseRepository } from "../port";
import { NOW_MS, statement, type Run } from "./sql";

// Taken when absent, expired or already the owner's: one upsert whose update is conditional.
const acquire = statement(
  "leases.acquire",
  `INSERT INTO leases (name, owner, until) VALUES ($1, $2, ${NOW_MS} + $3)
   ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
   WHERE leases.until < ${NOW_MS} OR leases.owner = excluded.owner`,
);
const release = statement("leases.release", `DELETE FROM leases WHERE name = $1 AND owner = $2`);

/** The leases table, timed by the database's clock. */
export function postgresLeases(run: Run): LeaseRepository {
  return {
    acquire: async (name, owner, ms) => (await run(acquire, [name, owner, ms])).rowCount === 1,
    release: async (name, owner) => void (await run(release, [name, owner])),
  };
}
