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
import { openLines, type LineRegistry } from "./lines/registry";
import { openSecrets } from "./secrets/stored";
import type { Secrets } from "./secrets/seal";
import type { Metrics } from "./observability/metrics";

/** Everything a request or a workflow run needs, built once at start. */
export interface App {
  config: Config;
  storage: Storage;
  log: Logger;
  /** Every line of the deployment, with its live driver (src/lines). */
  lines: LineRegistry;
  /** Seals and opens stored credentials (src/secrets). */
  secrets: Secrets;
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

/**
 * Builds the app over an open storage: its secrets (checked to open every stored one: a wrong
 * SECRET_KEY throws SecretKeyError) and its lines, the environment's written first.
 */
export async function createApp(config: Config, storage: Storage, log: Logger, metrics?: Metrics, opts: { warnUnsealed?: boolean } = {}): Promise<App> {
  const secrets = await openSecrets(config, storage.dialect === "postgres", storage, log, opts.warnUnsealed);
  const lines = await openLines({ config, log, storage, secrets });
  // The mode of every chat not set by hand, for every process's reads (src/db/chats.ts).
  await storage.chats.setDefaultMode(config.DEFAULT_CHAT_MODE);
  return {
    ...(metrics ? { metrics } : {}),
    config,
    storage,
    log,
    lines,
    secrets,
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
