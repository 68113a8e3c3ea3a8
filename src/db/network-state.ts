import { declare, get, run, sql } from "./sql";

/** Small values a network driver keeps (BlueBubbles' chat guids and catch-up cursor). */
export interface NetworkStateRepository {
  get(network: string, key: string): Promise<string | undefined>;
  /** One statement (upsert). */
  set(network: string, key: string, value: string): Promise<void>;
}

const byKey = sql<{ value: string }>("networkState.get", `SELECT value FROM network_state WHERE network = $network AND key = $key`);
const set = sql("networkState.set", `INSERT INTO network_state (network, key, value) VALUES ($network, $key, $value) ON CONFLICT (network, key) DO UPDATE SET value = excluded.value`);

export const networkState = declare<NetworkStateRepository>()({
  get: get(byKey, (network, key) => ({ network, key }), (row) => row?.value),
  set: run(set, (network, key, value) => ({ network, key, value })),
});
