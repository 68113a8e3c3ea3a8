import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, type Config } from "../../src/config";
import { thrownBy } from "./helpers";

const DEFAULTS: Config = {
  PORT: 3000,
  HOST: "127.0.0.1",
  DATABASE_URL: "./data/textwire.db",
  DATABASE_POOL_SIZE: 10,
  API_KEYS: [],
  NETWORK: "loopback",
  OPENAI_API_KEY: "",
  OPENAI_MODEL: "gpt-4o-mini",
  GENERATOR_TIMEOUT_MS: 30000,
  MAX_MESSAGE_LENGTH: 10000,
  RATE_LIMIT_PER_MINUTE: 600,
  RATE_LIMIT_BURST: 60,
  TRUSTED_PROXIES: [],
  MCP_ALLOWED_ORIGINS: [],
  WORKFLOWS_DIR: "./workflows",
  LOG_LEVEL: "info",
  WORKFLOW_RUNS_RETENTION_DAYS: 30,
  EVENTS_RETENTION_DAYS: 30,
  GENERATIONS_RETENTION_DAYS: 30,
  MENTION_PATTERNS: ["textwire"],
  DEFAULT_CHAT_MODE: "auto",
  HANDOFF_KEYWORDS: ["agent", "human", "representative"],
  HANDOFF_MINUTES: 60,
  MAINTENANCE_INTERVAL_MS: 60000,
  TWILIO_API_URL: "https://api.twilio.com",
  BLUEBUBBLES_SERVICE: "iMessage",
  TWILIO_SEND_TIMEOUT_MS: 30000,
  BLUEBUBBLES_SEND_TIMEOUT_MS: 120000,
  BLUEBUBBLES_RECONCILE_AFTER_MS: 120000,
  WEBHOOK_RETRY_SCHEDULE: [5, 300, 1800, 7200, 18000, 36000, 36000],
  ALLOW_PRIVATE_URLS: false,
  MEDIA_STORE: "./data/media",
  SHUTDOWN_DRAIN_MS: 2000,
};

describe("MENTION_PATTERNS", () => {
  test("comma-separated words, trimmed; empty entries dropped", () => {
    expect(loadConfig({ MENTION_PATTERNS: " Textwire, @bot ,,assistant" }).MENTION_PATTERNS).toEqual(["Textwire", "@bot", "assistant"]);
  });

  test("no word at all stops the start naming it", () => {
    expect(configError({ MENTION_PATTERNS: " , " }).message).toStartWith("invalid environment variable MENTION_PATTERNS: must hold at least one word");
  });
});

describe("TRUSTED_PROXIES", () => {
  test("comma-separated IPv4 and IPv6 CIDRs and addresses", () => {
    expect(loadConfig({ TRUSTED_PROXIES: " 10.0.0.0/8, fd00::/8,192.168.1.1 ,::1" }).TRUSTED_PROXIES).toEqual(["10.0.0.0/8", "fd00::/8", "192.168.1.1", "::1"]);
  });

  test.each(["10.0.0.0/33", "proxy.internal", "10.0.0.0/8;fd00::/129", "fd00::/200"])("%s stops the start with one line naming it", (value) => {
    const { message } = configError({ TRUSTED_PROXIES: value });
    expect(message).toStartWith("invalid environment variable TRUSTED_PROXIES: each entry must be an IPv4 or IPv6 address or CIDR");
    expect(message).not.toContain("\n");
  });
});

describe("MCP_ALLOWED_ORIGINS", () => {
  test("comma-separated origins, kept as browsers send them (no path, no trailing slash)", () => {
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: " https://Agents.example.com/, http://localhost:5173" }).MCP_ALLOWED_ORIGINS).toEqual([
      "https://agents.example.com",
      "http://localhost:5173",
    ]);
  });

  test.each(["agents.example.com", "ftp://agents.example.com", "https://a.example.com,,nope"])("%s stops the start with one line naming it", (value) => {
    const { message } = configError({ MCP_ALLOWED_ORIGINS: value });
    expect(message).toStartWith("invalid environment variable MCP_ALLOWED_ORIGINS: each entry must be an origin, e.g. https://app.example.com");
  });
});

describe("network settings", () => {
  test("each network's settings are required with it, named one at a time", () => {
    expect(configError({ NETWORK: "twilio" }).message).toBe("invalid environment variable TWILIO_ACCOUNT_SID: is required with NETWORK=twilio");
    const sid = "AC" + "0".repeat(32);
    expect(configError({ NETWORK: "twilio", TWILIO_ACCOUNT_SID: sid, TWILIO_AUTH_TOKEN: "t", TWILIO_FROM: "+14155550123" }).message).toContain(
      "PUBLIC_URL: is required with NETWORK=twilio",
    );
    expect(configError({ NETWORK: "bluebubbles", BLUEBUBBLES_URL: "http://127.0.0.1:1234" }).message).toContain("BLUEBUBBLES_PASSWORD");
    expect(configError({ TEXTWIRE_URL: "http://127.0.0.1:3000" }).message).toContain("TEXTWIRE_API_KEY: is required with TEXTWIRE_URL");
  });

  test("secrets are never echoed", () => {
    const err = configError({ NETWORK: "bluebubbles", BLUEBUBBLES_URL: "http://x", BLUEBUBBLES_PASSWORD: "p", WEBHOOK_SECRET: "short-secret" });
    expect(err.message).toContain("WEBHOOK_SECRET");
    expect(err.message).not.toContain("short-secret");
  });

  test("a complete Twilio configuration loads", () => {
    const config = loadConfig({
      NETWORK: "twilio",
      TWILIO_ACCOUNT_SID: "AC" + "a".repeat(32),
      TWILIO_AUTH_TOKEN: "token",
      TWILIO_FROM: "MG" + "b".repeat(32),
      PUBLIC_URL: "https://textwire.example.com",
    });
    expect(config.TWILIO_API_URL).toBe("https://api.twilio.com");
  });
});

const KEY_1 = "k1_aaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const KEY_2 = "k2-bbbbbbbbbbbbbbbbbbbbbbbbbbbb";

/** The ConfigError that `env` causes; fails the test when it loads. */
function configError(env: Record<string, string>): ConfigError {
  const err = thrownBy(() => loadConfig(env));
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

describe("defaults (docs/operations.md)", () => {
  test("an empty environment gives every default", () => {
    expect(loadConfig({})).toEqual(DEFAULTS);
  });

  test("an empty string counts as unset", () => {
    const empty = Object.fromEntries(Object.keys(DEFAULTS).map((k) => [k, ""]));
    expect(loadConfig(empty)).toEqual(DEFAULTS);
  });

  test("variables Textwire does not read are ignored", () => {
    expect(loadConfig({ PATH: "/usr/bin", HOME: "/root", NODE_ENV: "production" })).toEqual(DEFAULTS);
  });
});

describe("values are parsed", () => {
  test("numbers, lists and enums", () => {
    const config = loadConfig({
      PORT: "8080",
      HOST: "0.0.0.0",
      DATABASE_URL: ":memory:",
      API_KEYS: ` ${KEY_1} ,${KEY_2},`,
      MAX_MESSAGE_LENGTH: "160",
      RATE_LIMIT_PER_MINUTE: "0",
      RATE_LIMIT_BURST: "5",
      LOG_LEVEL: "debug",
      OPENAI_BASE_URL: "http://localhost:11434/v1",
    });
    expect(config).toMatchObject({
      PORT: 8080,
      HOST: "0.0.0.0",
      DATABASE_URL: ":memory:",
      API_KEYS: [KEY_1, KEY_2],
      MAX_MESSAGE_LENGTH: 160,
      RATE_LIMIT_PER_MINUTE: 0,
      RATE_LIMIT_BURST: 5,
      LOG_LEVEL: "debug",
      OPENAI_BASE_URL: "http://localhost:11434/v1",
    });
  });

  test("PORT 0 (any free port) and 65535 are allowed", () => {
    expect(loadConfig({ PORT: "0" }).PORT).toBe(0);
    expect(loadConfig({ PORT: "65535" }).PORT).toBe(65535);
  });

  test("WORKER_PORT is unset by default and takes what PORT takes", () => {
    expect(loadConfig({}).WORKER_PORT).toBeUndefined();
    expect(loadConfig({ WORKER_PORT: "" }).WORKER_PORT).toBeUndefined();
    expect(loadConfig({ WORKER_PORT: "0" }).WORKER_PORT).toBe(0);
    expect(loadConfig({ WORKER_PORT: "9464" }).WORKER_PORT).toBe(9464);
    expect(loadConfig({ WORKER_PORT: "65535" }).WORKER_PORT).toBe(65535);
  });

  test("DATABASE_POOL_SIZE from 1 to 100", () => {
    expect(loadConfig({ DATABASE_POOL_SIZE: "1" }).DATABASE_POOL_SIZE).toBe(1);
    expect(loadConfig({ DATABASE_POOL_SIZE: "100" }).DATABASE_POOL_SIZE).toBe(100);
  });
});

describe("a bad value is one line naming the variable", () => {
  test.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["PORT", "-1"],
    ["PORT", "3.5"],
    ["WORKER_PORT", "abc"],
    ["WORKER_PORT", "70000"],
    ["WORKER_PORT", "-1"],
    ["MAX_MESSAGE_LENGTH", "0"],
    ["RATE_LIMIT_BURST", "0"],
    ["GENERATOR_TIMEOUT_MS", "soon"],
    ["LOG_LEVEL", "loud"],
    ["NETWORK", "carrier-pigeon"],
    ["OPENAI_BASE_URL", "not a url"],
    ["WORKFLOW_RUNS_RETENTION_DAYS", "0"],
    ["WORKFLOW_RUNS_RETENTION_DAYS", "a month"],
    ["MAINTENANCE_INTERVAL_MS", "10"],
    ["DATABASE_POOL_SIZE", "0"],
    ["DATABASE_POOL_SIZE", "101"],
  ])("%s=%p", (name, value) => {
    const err = configError({ [name]: value });
    expect(err.message).toContain(name);
    expect(err.message).not.toContain("\n");
    expect(err.message).toContain(value);
  });

  test("a valid variable is not blamed for another's mistake", () => {
    const err = configError({ PORT: "8080", LOG_LEVEL: "loud" });
    expect(err.message).toContain("LOG_LEVEL");
    expect(err.message).not.toContain("PORT");
  });

  // A quoted .env value may hold a newline; docs/operations.md asks for one line.
  test("a value with a newline still gives one line", () => {
    const err = configError({ PORT: "80\n80" });
    expect(err.message).toContain("PORT");
    expect(err.message).not.toContain("\n");
  });
});

describe("API keys are never echoed", () => {
  test("a short key is refused, naming API_KEYS, without showing the value", () => {
    const err = configError({ API_KEYS: "tooshortkey123" });
    expect(err.message).toContain("API_KEYS");
    expect(err.message).not.toContain("\n");
    expect(err.message).not.toContain("tooshortkey123");
  });

  test("one bad key among good ones: none of them is shown", () => {
    const err = configError({ API_KEYS: `${KEY_1},short!,${KEY_2}` });
    expect(err.message).toContain("API_KEYS");
    for (const part of [KEY_1, KEY_2, "short!"]) expect(err.message).not.toContain(part);
  });

  test("a key with characters outside the URL-safe set is refused", () => {
    const err = configError({ API_KEYS: "aaaaaaaaaaaaaaaaaaaaaaaaaaaa+/" });
    expect(err.message).toContain("API_KEYS");
    expect(err.message).not.toContain("aaaaaaaaaaaaaaaaaaaaaaaaaaaa+/");
  });
});

describe("retention", () => {
  test("MESSAGE_RETENTION_DAYS is unset by default (messages kept for good) and takes whole days", () => {
    expect(loadConfig({}).MESSAGE_RETENTION_DAYS).toBeUndefined();
    expect(loadConfig({ MESSAGE_RETENTION_DAYS: "90", EVENTS_RETENTION_DAYS: "7" })).toMatchObject({ MESSAGE_RETENTION_DAYS: 90, EVENTS_RETENTION_DAYS: 7 });
    expect(configError({ GENERATIONS_RETENTION_DAYS: "0" }).message).toStartWith("invalid environment variable GENERATIONS_RETENTION_DAYS:");
  });
});
