import { z } from "zod";
import { parseTrustedProxy } from "./api/client-address";
import { parseSecretKey } from "./secrets/seal";
import { DEFAULT_MENTION_PATTERNS } from "./workflows/mentions";
import { CHAT_MODES, DEFAULT_HANDOFF_KEYWORDS, DEFAULT_HANDOFF_MINUTES } from "./vocabulary/chat-modes";

const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const apiKey = z
  .string()
  .regex(/^[A-Za-z0-9_-]{24,}$/, "each key must be at least 24 letters, digits, '_' or '-'");

const secretKey = z.string().trim().refine((v) => parseSecretKey(v) !== undefined, "must be 32 bytes in base64 or hex, e.g. the output of: openssl rand -base64 32");

/** The LangChain chat model providers whose package is installed (GENERATOR_MODEL's prefix). */
export const GENERATOR_PROVIDERS: readonly string[] = ["openai"];

/** Every environment variable Textwire reads, parsed once. Defaults match docs/operations.md. */
export const configSchema = z.object({
  PORT: int(0, 65535).default(3000),
  /** Worker mode only: serve health and metrics on this port (docs/operations.md); unset: a worker answers no HTTP. */
  WORKER_PORT: int(0, 65535).optional(),
  HOST: z.string().trim().min(1, "must not be empty").default("127.0.0.1"),
  DATABASE_URL: z.string().trim().min(1, "must not be empty").default("./data/textwire.db"),
  /** Connections each process keeps to PostgreSQL (unused on SQLite). */
  DATABASE_POOL_SIZE: int(1, 100).default(10),
  API_KEYS: z
    .string()
    .default("")
    .transform((s) => s.split(",").map((k) => k.trim()).filter(Boolean))
    .pipe(z.array(apiKey)),
  NETWORK: z.enum(["loopback", "twilio", "bluebubbles"]).default("loopback"),
  /** Where the network reaches Textwire (its webhooks), e.g. https://textwire.example.com */
  PUBLIC_URL: z.url("must be a URL, e.g. https://textwire.example.com").optional(),
  TWILIO_ACCOUNT_SID: z.string().regex(/^AC[0-9a-fA-F]{32}$/, "must be AC followed by 32 hex digits").optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_FROM: z
    .string()
    .regex(/^(\+[1-9]\d{6,14}|MG[0-9a-fA-F]{32})$/, "must be an E.164 number or a Messaging Service SID (MG…)")
    .optional(),
  TWILIO_API_URL: z.url("must be a URL").default("https://api.twilio.com"),
  BLUEBUBBLES_URL: z.url("must be a URL, e.g. http://192.168.1.20:1234").optional(),
  BLUEBUBBLES_PASSWORD: z.string().min(1).optional(),
  /** The service of a new chat's guid: iMessage, or SMS when the Mac relays green-bubble texts. */
  BLUEBUBBLES_SERVICE: z.enum(["iMessage", "SMS"], "must be iMessage or SMS").default("iMessage"),
  /** How long a BlueBubbles send may take; the server itself waits up to 2 minutes (docs/networks.md). */
  /** A Twilio send with no answer after this has an unknown outcome (504), never `failed`. */
  TWILIO_SEND_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  BLUEBUBBLES_SEND_TIMEOUT_MS: int(1000, 3_600_000).default(120_000),
  /** Outbound BlueBubbles messages not final after this are looked up on the server. */
  BLUEBUBBLES_RECONCILE_AFTER_MS: int(1000, 86_400_000).default(120_000),
  WEBHOOK_SECRET: z.string().regex(/^[A-Za-z0-9_-]{24,}$/, "must be at least 24 letters, digits, '_' or '-'").optional(),
  OPENAI_API_KEY: z.string().default(""),
  OPENAI_BASE_URL: z.url("must be a URL").optional(),
  OPENAI_MODEL: z.string().min(1).default("gpt-4o-mini"),
  /** provider:model for the generator (src/generator/configured.ts); unset: openai:<OPENAI_MODEL>. */
  GENERATOR_MODEL: z
    .string()
    .trim()
    .regex(/^[a-z][a-z0-9_-]*:\S+$/, "must be provider:model, e.g. openai:gpt-4o-mini")
    .refine((v) => GENERATOR_PROVIDERS.includes(v.slice(0, v.indexOf(":"))), {
      error: (issue) => `provider "${String(issue.input).split(":")[0]}" is not installed; installed: ${GENERATOR_PROVIDERS.join(", ")}`,
    })
    .optional(),
  GENERATOR_TIMEOUT_MS: int(1).default(30000),
  MAX_MESSAGE_LENGTH: int(1, 1_000_000).default(10000),
  RATE_LIMIT_PER_MINUTE: int(0).default(600),
  RATE_LIMIT_BURST: int(1).default(60),
  /** Proxies whose X-Forwarded-For is believed, for the failed-authentication throttle. */
  TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((s) => s.split(",").map((entry) => entry.trim()).filter(Boolean))
    .pipe(
      z.array(
        z.string().refine(
          (entry) => {
            try {
              parseTrustedProxy(entry);
              return true;
            } catch {
              return false;
            }
          },
          "each entry must be an IPv4 or IPv6 address or CIDR, e.g. 10.0.0.0/8 or fd00::/8",
        ),
      ),
    ),
  WORKFLOWS_DIR: z.string().trim().min(1).default("./workflows"),
  LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  /** Workflow run records older than this are deleted by maintenance. */
  WORKFLOW_RUNS_RETENTION_DAYS: int(1, 36500).default(30),
  /** Events, settled webhook deliveries and network status reports older than this are deleted by maintenance. */
  EVENTS_RETENTION_DAYS: int(1, 36500).default(30),
  /** Generated replies older than this are deleted by maintenance. */
  GENERATIONS_RETENTION_DAYS: int(1, 36500).default(30),
  /** Unset: messages are kept for good; set: older ones are deleted with their media (docs/operations.md). */
  MESSAGE_RETENTION_DAYS: int(1, 36500).optional(),
  /** Words that mention us in a group chat (docs/workflows.md "Group chats"): comma-separated, any case, whole words. */
  MENTION_PATTERNS: z
    .string()
    .default(DEFAULT_MENTION_PATTERNS.join(","))
    .transform((s) => s.split(",").map((word) => word.trim()).filter(Boolean))
    .pipe(z.array(z.string().max(100, { error: "each word must be at most 100 characters" })).min(1, { error: "must hold at least one word, e.g. textwire" })),
  /** The mode of every chat not set by hand (docs/supervision.md): auto, supervised or human. */
  DEFAULT_CHAT_MODE: z.enum(CHAT_MODES, `must be one of ${CHAT_MODES.join(", ")}`).default("auto"),
  /** Inbound texts that hand a chat to a person (docs/supervision.md): comma-separated words, matched as STOP is. */
  HANDOFF_KEYWORDS: z
    .string()
    .default(DEFAULT_HANDOFF_KEYWORDS.join(","))
    .transform((s) => s.split(",").map((word) => word.trim()).filter(Boolean))
    .pipe(z.array(z.string().max(100, { error: "each word must be at most 100 characters" }))),
  /** How long a chat a person took over stays `human` after the last person's send; fractions allowed (docs/supervision.md). */
  HANDOFF_MINUTES: z
    .string()
    .trim()
    .default(String(DEFAULT_HANDOFF_MINUTES))
    .refine((v) => /^\d+(\.\d+)?$/.test(v) && Number(v) > 0 && Number(v) <= 525_600, "must be a number of minutes above 0, at most 525600 (fractions allowed, e.g. 0.5)")
    .transform(Number),
  /** How often maintenance runs; shorter only for tests (docs/operations.md). */
  MAINTENANCE_INTERVAL_MS: int(100).default(60000),
  /** Browser origins allowed to call /mcp (docs/mcp.md); a request with any other Origin header is 403. */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default("")
    .transform((s) => s.split(",").map((entry) => entry.trim()).filter(Boolean))
    .pipe(z.array(z.url({ protocol: /^https?$/, error: "each entry must be an origin, e.g. https://app.example.com" }).transform((url) => new URL(url).origin))),
  /** Worker mode only: run workflows against this Textwire server instead of the local database. */
  TEXTWIRE_URL: z.url("must be a URL, e.g. https://textwire.example.com").optional(),
  TEXTWIRE_API_KEY: apiKey.optional(),
  /** Seconds after a failed webhook attempt before the next one, each with up to 10 % jitter (docs/webhooks.md). */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .trim()
    .default("5,300,1800,7200,18000,36000,36000")
    .transform((s) => s.split(",").map((v) => v.trim()))
    .pipe(
      z
        .array(z.string().regex(/^\d+(\.\d+)?$/, "must be comma-separated seconds, e.g. 5,300,1800").transform(Number))
        .max(50, "must have at most 50 retries"),
    ),
  /** Where media files are kept: a folder (relative to the working directory) or s3://bucket/prefix (docs/operations.md). */
  MEDIA_STORE: z
    .string()
    .trim()
    .min(1, "must not be empty")
    .refine((v) => !v.startsWith("s3://") || /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(v), "must be a folder or s3://bucket/prefix")
    .default("./data/media"),
  /** Signs the media URLs networks fetch (Twilio's MediaUrl); unset: a random secret kept in the database. */
  MEDIA_URL_SECRET: z.string().min(24, "must be at least 24 characters").optional(),
  /** Serves GET /metrics to `Authorization: Bearer <this>`; unset: no metrics are kept and /metrics is 404 (docs/operations.md). */
  METRICS_TOKEN: z.string().regex(/^[A-Za-z0-9_-]{24,}$/, "must be at least 24 letters, digits, '_' or '-'").optional(),
  /** On SIGTERM, how long /health/ready answers 503 while requests are still served, before the shutdown (docs/operations.md). */
  SHUTDOWN_DRAIN_MS: int(0, 600_000).default(2000),
  /** Where OpenTelemetry spans go (OTLP over HTTP); unset: no tracing, nothing of OpenTelemetry loaded (docs/operations.md). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url("must be a URL, e.g. http://127.0.0.1:4318").optional(),
  /** Seals stored credentials (AES-256-GCM): 32 bytes, base64 or hex; unset on SQLite: generated into secret.key beside the database (docs/lines.md). */
  SECRET_KEY: secretKey.optional(),
  /** `textwire secrets rotate` only: the key the stored secrets are sealed with now. */
  OLD_SECRET_KEY: secretKey.optional(),
  /** Lets webhook endpoints be http and point at private, loopback and link-local addresses (development and tests). */
  ALLOW_PRIVATE_URLS: z.enum(["true", "false"], "must be true or false").default("false").transform((v) => v === "true"),
});

export type Config = z.output<typeof configSchema>;

/** The settings each network driver needs. */
const NETWORK_SETTINGS = {
  twilio: ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM", "PUBLIC_URL"],
  bluebubbles: ["BLUEBUBBLES_URL", "BLUEBUBBLES_PASSWORD", "WEBHOOK_SECRET"],
} as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Parses the environment; an empty variable counts as unset. Throws one line naming the variable. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(
    Object.keys(configSchema.shape)
      .map((k) => [k, env[k]] as const)
      .filter(([, v]) => v !== undefined && v !== ""),
  );
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? "environment");
    const value = env[name];
    // JSON quoting keeps the message on one line whatever the value holds.
    const shown = /KEY|TOKEN|PASSWORD|SECRET/.test(name) ? "" : ` (got ${JSON.stringify(value)})`;
    throw new ConfigError(`invalid environment variable ${name}: ${issue.message}${shown}`);
  }
  const config = parsed.data;
  const required: [boolean, readonly (keyof Config)[], string][] = [
    [config.TEXTWIRE_URL !== undefined, ["TEXTWIRE_API_KEY"], "with TEXTWIRE_URL"],
    [config.NETWORK === "twilio", NETWORK_SETTINGS.twilio, "with NETWORK=twilio"],
    [config.NETWORK === "bluebubbles", NETWORK_SETTINGS.bluebubbles, "with NETWORK=bluebubbles"],
  ];
  for (const [applies, names, when] of required) {
    const missing = applies ? names.find((n) => config[n] === undefined) : undefined;
    if (missing) throw new ConfigError(`invalid environment variable ${missing}: is required ${when}`);
  }
  return config;
}
