import type { Database } from "bun:sqlite";
import type { LeaseRepository } from "../port";
import type { Sync } from "./gate";

/** The leases table. `now` counts milliseconds. */
export function sqliteLeases(sqlite: Database, now: () => number): Sync<LeaseRepository> {
  // Taken when absent, expired or already the owner's: one upsert whose update is conditional.
  const acquire = sqlite.prepare<never, [{ name: string; owner: string; until: number; now: number }]>(
    `INSERT INTO leases (name, owner, until) VALUES ($name, $owner, $until)
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until
     WHERE leases.until < $now OR leases.owner = excluded.owner`,
  );
  const release = sqlite.prepare<never, [{ name: string; owner: string }]>(`DELETE FROM leases WHERE name = $name AND owner = $owner`);
  return {
    acquire(name, owner, ms) {
      const t = now();
      return acquire.run({ name, owner, until: t + ms, now: t }).changes === 1;
    },
    release: (name, owner) => void release.run({ name, owner }),
  };
}
