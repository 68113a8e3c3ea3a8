import type { NetworkStateRepository } from "../port";
import { statement, type Run } from "./sql";

const get = statement<{ value: string }>("networkState.get", `SELECT value FROM network_state WHERE network = $1 AND key = $2`);
const set = statement(
  "networkState.set",
  `INSERT INTO network_state (network, key, value) VALUES ($1, $2, $3) ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`,
);

/** The network_state table. */
export function postgresNetworkState(run: Run): NetworkStateRepository {
  return {
    get: async (network, key) => (await run(get, [network, key])).rows[0]?.value,
    set: async (network, key, value) => void (await run(set, [network, key, value])),
  };
}
