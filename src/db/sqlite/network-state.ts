import type { Database } from "bun:sqlite";
import type { NetworkStateRepository } from "../port";
import type { Sync } from "./gate";

/** The network_state table. */
export function sqliteNetworkState(sqlite: Database): Sync<NetworkStateRepository> {
  const get = sqlite.prepare<{ value: string }, [{ network: string; key: string }]>(`SELECT value FROM network_state WHERE network = $network AND key = $key`);
  const set = sqlite.prepare<never, [{ network: string; key: string; value: string }]>(
    `INSERT INTO network_state (network, key, value) VALUES ($network, $key, $value) ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`,
  );
  return {
    get: (network, key) => get.get({ network, key })?.value,
    set: (network, key, value) => void set.run({ network, key, value }),
  };
}
