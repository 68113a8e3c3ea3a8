import { changed, declare, run, sql } from "./sql";

/** Leases by name that any process may take (e.g. the maintenance leader), so a task runs in one process at a time. Workflows' own leases live on their rows. */
export interface LeaseRepository {
  /** One statement: takes or extends the lease for `ms` when it is free, expired or already `owner`'s; false when another holds it. */
  acquire(name: string, owner: string, ms: number): Promise<boolean>;
  /** One statement: lets the lease go if `owner` holds it. */
  release(name: string, owner: string): Promise<void>;
}

// Taken when absent, expired or already the owner's: one upsert whose update is conditional.
const acquire = sql("leases.acquire", `INSERT INTO leases (name, owner, until) VALUES ($name, $owner, {now_ms} + $ms)
   ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
   WHERE leases.until < {now_ms} OR leases.owner = excluded.owner`);
const release = sql("leases.release", `DELETE FROM leases WHERE name = $name AND owner = $owner`);

export const leases = declare<LeaseRepository>()({
  acquire: run(acquire, (name, owner, ms) => ({ name, owner, ms }), changed),
  release: run(release, (name, owner) => ({ name, owner })),
});
