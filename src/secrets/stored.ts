import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Repositories } from "../db/port";
import type { Logger } from "../log";
import { createSecrets, isSealed, newSecretKey, parseSecretKey, SecretKeyError, type Secrets } from "./seal";

/** Where a SQLite deployment without SECRET_KEY keeps the key it generated: beside its database. */
export const secretKeyFile = (databaseUrl: string) => join(dirname(resolve(databaseUrl)), "secret.key");

/**
 * The deployment's secrets key: SECRET_KEY; else, on a SQLite file, the one in `secret.key`
 * beside the database (generated there, mode 0600, on the first start); else (in memory) a
 * key for this process only. On PostgreSQL without SECRET_KEY there is none: every process
 * must share one, so none is made up (a warning says so, once a start).
 */
export function loadSecretKey(config: { SECRET_KEY?: string | undefined; DATABASE_URL: string }, postgres: boolean, log: Logger, warnUnsealed = true): Buffer | undefined {
  if (config.SECRET_KEY) return parseSecretKey(config.SECRET_KEY);
  if (postgres) {
    if (warnUnsealed) log.warn("SECRET_KEY is not set: line credentials and webhook signing secrets are stored unencrypted; set SECRET_KEY (the same on every process) to encrypt them (docs/lines.md)");
    return undefined;
  }
  if (config.DATABASE_URL === ":memory:") return parseSecretKey(newSecretKey());
  const file = secretKeyFile(config.DATABASE_URL);
  if (existsSync(file)) {
    const key = parseSecretKey(readFileSync(file, "utf8"));
    if (!key) throw new SecretKeyError(`SECRET_KEY: ${file} does not hold a 32-byte key (base64 or hex)`);
    return key;
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  // wx: two processes starting together on a new database never write two keys.
  try {
    writeFileSync(file, `${newSecretKey()}\n`, { mode: 0o600, flag: "wx" });
    chmodSync(file, 0o600);
    log.info("generated a secret key for stored credentials; back it up with the database", { file });
  } catch (err) {
    if ((err as { code?: string }).code !== "EEXIST") throw err;
  }
  return parseSecretKey(readFileSync(file, "utf8"));
}

type SecretStore = Pick<Repositories, "lines" | "webhooks">;

/**
 * Every stored secret, opened with `from` and stored again as `to` seals it: at start
 * (`from` = `to`: plain values get sealed once a key is set, sealed ones are checked to
 * open), and by `textwire secrets rotate`. Throws SecretKeyError, changing nothing, when
 * any value does not open. Returns how many values were rewritten.
 */
export async function resealStored(storage: SecretStore, from: Secrets, to: Secrets): Promise<number> {
  const lines = await storage.lines.credentials();
  const endpoints = await storage.webhooks.listEndpoints();
  // Every value is opened before any is written: a wrong key changes nothing.
  const opened = {
    lines: lines.map((l) => ({ ...l, plain: from.open(l.credentials) })),
    endpoints: endpoints.map((e) => ({ ...e, plain: from.open(e.secret), previousPlain: e.previousSecret === null ? null : from.open(e.previousSecret) })),
  };
  const rewrite = (stored: string) => from !== to || (to.sealing && !isSealed(stored));
  let rewritten = 0;
  for (const l of opened.lines) {
    if (!rewrite(l.credentials)) continue;
    await storage.lines.setCredentials(l.id, to.seal(l.plain));
    rewritten++;
  }
  for (const e of opened.endpoints) {
    if (!rewrite(e.secret) && (e.previousSecret === null || !rewrite(e.previousSecret))) continue;
    if (await storage.webhooks.setSecrets(e.id, e.secret, to.seal(e.plain), e.previousPlain === null ? null : to.seal(e.previousPlain))) rewritten++;
  }
  return rewritten;
}

/** The secrets of this process: its key loaded, and every stored secret checked to open (and sealed, once a key is set). */
export async function openSecrets(
  config: { SECRET_KEY?: string | undefined; DATABASE_URL: string },
  postgres: boolean,
  storage: SecretStore,
  log: Logger,
  /** A server's start warns that secrets are stored unencrypted; a CLI command does not repeat it. */
  warnUnsealed = true,
): Promise<Secrets> {
  const secrets = createSecrets(loadSecretKey(config, postgres, log, warnUnsealed));
  const sealed = await resealStored(storage, secrets, secrets);
  if (sealed > 0) log.info("encrypted stored secrets under SECRET_KEY", { count: sealed });
  return secrets;
}

export { createSecrets, SecretKeyError, type Secrets } from "./seal";
