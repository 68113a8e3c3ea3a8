import { createKeyVerifier, type KeyVerifier } from "./auth/keys";
import { createRateLimiter, type RateLimiter } from "./api/rate-limit";
import type { Config } from "./config";
import type { Storage } from "./db/port";
import { createConfiguredGenerator } from "./generator/configured";
import type { Generator } from "./generator/generator";
import type { Logger } from "./log";
import type { MediaDeps } from "./media/service";
import { mediaUrlSecret } from "./media/signed-url";
import { openMediaStore } from "./media/store";
import { networkStateStore } from "./messages/network-events";
import { createNetwork, type NetworkDriver } from "./network";
import type { Metrics } from "./observability/metrics";

/** Everything a request or a workflow run needs, built once at start. */
export interface App {
  config: Config;
  storage: Storage;
  log: Logger;
  network: NetworkDriver;
  /** The media store and how media is fetched and signed. */
  media: MediaDeps;
  /** Null when no OPENAI_API_KEY is set. */
  generator: Generator | null;
  verifyKey: KeyVerifier;
  /** Per API key; absent when RATE_LIMIT_PER_MINUTE is 0. */
  keyLimiter: RateLimiter | null;
  /** Failed authentications per client address. */
  authFailures: RateLimiter;
  /** What this process counts for GET /metrics; absent when METRICS_TOKEN is unset. */
  metrics?: Metrics;
}

export function createApp(config: Config, storage: Storage, log: Logger, metrics?: Metrics): App {
  return {
    ...(metrics ? { metrics } : {}),
    config,
    storage,
    log,
    network: createNetwork(config, { log, state: networkStateStore(storage, config.NETWORK) }),
    media: {
      store: openMediaStore(config.MEDIA_STORE),
      allowPrivate: config.ALLOW_PRIVATE_URLS,
      ...(config.PUBLIC_URL ? { publicUrl: config.PUBLIC_URL } : {}),
      urlSecret: mediaUrlSecret(config.MEDIA_URL_SECRET, storage.networkState),
    },
    generator: createConfiguredGenerator(config, metrics),
    verifyKey: createKeyVerifier(storage.apiKeys, config.API_KEYS),
    keyLimiter:
      config.RATE_LIMIT_PER_MINUTE > 0
        ? createRateLimiter({ perMinute: config.RATE_LIMIT_PER_MINUTE, burst: config.RATE_LIMIT_BURST })
        : null,
    authFailures: createRateLimiter({ perMinute: 20, burst: 20 }),
  };
}
