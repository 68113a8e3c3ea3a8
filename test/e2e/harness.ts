// Boots the real Textwire server (`bun run start`) and CLI (`bun run textwire`) as
// subprocesses against a test database of their own, and talks to them over real HTTP.
//
// The database is a temporary SQLite file, or, in the PostgreSQL pass (TEST_DIALECT=postgres
// with TEST_DATABASE_URL, README "Tests"), a fresh PostgreSQL database: one suite, two
// dialects. Tests that look inside the database go through TestDatabase, which speaks both.
//
// Every wait is bounded and fails with the output collected so far. Servers run in
// their own process group, so kill() also ends the `bun src/main.ts` child that
// `bun run` starts (SIGKILL is not forwarded by `bun run`).
//
// Failed authentication is throttled per client address (docs/api.md: 20 a minute),
// and every test talks from 127.0.0.1: keep each server below 20 failed attempts
// unless the test is about that throttle.
import { Database, type SQLQueryBindings } from "bun:sqlite";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { Subprocess } from "bun";
import { afterAll, describe, test } from "bun:test";
import pg from "pg";
import { configSchema } from "../../src/config";
import { createTestDatabase, DATABASE_NAME_PREFIX, TEST_DATABASE_URL } from "../support/postgres";

export const ROOT = resolve(import.meta.dir, "..", "..");

const STARTUP_MS = 15_000;
const STOP_MS = 15_000;
const CLI_MS = 15_000;

const LISTENING = /listening on (http:\/\/[0-9.]+:\d+)/;
export const KEY_PATTERN = /\btw_[A-Za-z0-9_-]{24,}/g;

/**
 * Every variable the server reads (src/config.ts, docs/operations.md), and NODE_ENV: the
 * inherited environment never decides one of them.
 */
const CONFIG_VARS = [...Object.keys(configSchema.shape), "NODE_ENV"];

/** An env overlay; `undefined` removes a variable. */
export type EnvOverlay = Record<string, string | undefined>;

/** A fresh API key for `API_KEYS` (at least 24 letters, digits, `_` or `-`: docs/operations.md). */
export function newApiKey(): string {
  return "tw_test_" + randomBytes(24).toString("base64url");
}

export type Dialect = "sqlite" | "postgres";

/** The database this run's servers use: SQLite files unless TEST_DIALECT=postgres. */
export const DIALECT: Dialect = process.env.TEST_DIALECT === "postgres" ? "postgres" : "sqlite";
if (DIALECT === "postgres" && !TEST_DATABASE_URL) {
  throw new Error("TEST_DIALECT=postgres needs TEST_DATABASE_URL (an admin URL, e.g. postgres://postgres@127.0.0.1:5432/postgres)");
}
export const onPostgres = DIALECT === "postgres";

/**
 * For the few tests about SQLite itself (its files, `:memory:`, its write lock): they belong
 * to the SQLite pass and are not part of the PostgreSQL pass, whose own start-up and
 * start-up race tests are startup.postgres.test.ts and scale.multiprocess.test.ts.
 */
export const testOnSqlite: typeof test = onPostgres ? (((..._args: unknown[]) => {}) as unknown as typeof test) : test;
export const describeOnSqlite: typeof describe = onPostgres ? (((..._args: unknown[]) => {}) as unknown as typeof describe) : describe;

/** A value bound to a `?` placeholder. */
export type SqlValue = string | number | boolean | null;

/** Writes held back until release(). */
export interface WriteBlock {
  release(): Promise<void>;
}

/** One test's database, and a way to look inside it in either dialect. */
export interface TestDatabase {
  readonly dialect: Dialect;
  /** DATABASE_URL: a SQLite file (created by the server) or a fresh PostgreSQL database. */
  readonly url: string;
  /** A temporary folder of its own, for workflow files and traces. */
  readonly dir: string;
  /**
   * Runs one statement on a connection of its own and returns its rows. Placeholders are
   * `?`; quote camel-case aliases (`AS "startedAt"`), PostgreSQL folds bare ones.
   */
  query<T = Record<string, unknown>>(sql: string, ...params: SqlValue[]): Promise<T[]>;
  /** Runs one statement and returns how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): Promise<number>;
  /**
   * Until release(), the server's writes wait, and after 5 s fail with an error that says
   * "locked"; reads go on. On SQLite another connection holds the write lock (5 s is the
   * server's busy timeout); on PostgreSQL, which has no such timeout, a trigger on every
   * table does the same.
   */
  blockWrites(): Promise<WriteBlock>;
  /** Everything stored, as text, to search for what must never be stored (a whole key). */
  contents(): Promise<string>;
  /** Removes the file, or drops the database (closing its connections), and the folder. */
  cleanup(): Promise<void>;
}

/** The janitor's last act in the PostgreSQL pass: drop what this run created and left. */
const DROP_LEFTOVERS = `import pg from "pg";
const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL, connectionTimeoutMillis: 5000 });
await admin.connect();
const { rows } = await admin.query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)", [${JSON.stringify(DATABASE_NAME_PREFIX)}]);
for (const { datname } of rows) await admin.query('DROP DATABASE IF EXISTS "' + datname + '" WITH (FORCE)');
await admin.end();`;

let runRoot: string | undefined;

/**
 * One folder per test run holds every temporary database. bun test fires no exit event,
 * so a detached janitor removes the folder, and drops the PostgreSQL databases this run
 * created, once this process has gone.
 */
function tempRoot(): string {
  if (runRoot) return runRoot;
  const root = mkdtempSync(join(tmpdir(), "textwire-e2e-"));
  const janitor = Bun.spawn(
    ["sh", "-c", 'while kill -0 "$1" 2>/dev/null; do sleep 2; done; rm -rf "$2"; [ -z "$3" ] || exec bun -e "$3"', "janitor", String(process.pid), root, onPostgres ? DROP_LEFTOVERS : ""],
    { cwd: ROOT, stdin: "ignore", stdout: "ignore", stderr: "ignore", detached: true },
  );
  janitor.unref();
  runRoot = root;
  return root;
}

/** A new folder inside this run's temporary root. */
function tempDir(): string {
  return mkdtempSync(join(tempRoot(), "db-"));
}

/** A database of the run's dialect, new and empty, for one test or suite. */
export async function testDatabase(): Promise<TestDatabase> {
  if (DIALECT === "sqlite") return sqliteDatabase();
  const dir = tempDir();
  const created = await createTestDatabase();
  return postgresDatabase(created.url, dir, async () => {
    await created.drop();
    rmSync(dir, { recursive: true, force: true });
  });
}

/**
 * A SQLite database, whatever the run's dialect: for tests about SQLite itself. `file` is
 * a path inside a new folder, or an absolute path or `:memory:` taken as it is.
 */
export function sqliteDatabase(file = "textwire.db"): TestDatabase {
  const dir = tempDir();
  const url = file === ":memory:" || isAbsolute(file) ? file : join(dir, file);
  const open = () => {
    const db = new Database(url);
    db.run("PRAGMA busy_timeout = 5000");
    return db;
  };
  const using = <T>(work: (db: Database) => T): T => {
    const db = open();
    try {
      return work(db);
    } finally {
      db.close();
    }
  };
  return {
    dialect: "sqlite",
    url,
    dir,
    query: async <T>(sql: string, ...params: SqlValue[]) => using((db) => db.query(sql).all(...(params as SQLQueryBindings[])) as T[]),
    run: async (sql, ...params) => using((db) => db.query(sql).run(...(params as SQLQueryBindings[])).changes),
    async blockWrites() {
      const db = open();
      db.run("BEGIN IMMEDIATE");
      return {
        async release() {
          db.run("ROLLBACK");
          db.close();
        },
      };
    },
    async contents() {
      return [url, `${url}-wal`]
        .filter((p) => existsSync(p))
        .map((p) => readFileSync(p).toString("latin1"))
        .join("");
    },
    async cleanup() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `?` placeholders as PostgreSQL's `$1`, `$2`, … (no test's SQL has a `?` inside a string). */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};
/** µs and ms times are bigint columns; every one a test reads is a safe integer. */
const INT8_AS_NUMBER = { getTypeParser: (oid: number, format?: string) => (oid === 20 ? Number : pg.types.getTypeParser(oid, format as "text")) };

/** An advisory lock the test holds while writes wait (any number of our own). */
const WRITES_LOCK = 7_465_787_478;
/** A write waits for the test's lock as SQLite's busy timeout waits: 5 s, then "locked". */
const WAIT_FOR_WRITES = `CREATE OR REPLACE FUNCTION wait_for_writes() RETURNS trigger LANGUAGE plpgsql AS $$
  DECLARE deadline timestamptz := clock_timestamp() + interval '5 seconds';
  BEGIN
    WHILE NOT pg_try_advisory_xact_lock_shared(${WRITES_LOCK}) LOOP
      IF clock_timestamp() > deadline THEN RAISE EXCEPTION 'database is locked (a test holds writes)'; END IF;
      PERFORM pg_sleep(0.02);
    END LOOP;
    RETURN NULL;
  END $$`;

function postgresDatabase(url: string, dir: string, cleanup: () => Promise<void>): TestDatabase {
  const using = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000, types: INT8_AS_NUMBER });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const tables = (client: pg.Client) =>
    client.query<{ name: string }>("SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')");
  return {
    dialect: "postgres",
    url,
    dir,
    query: <T>(sql: string, ...params: SqlValue[]) => using(async (c) => (await c.query(numbered(sql), params)).rows as T[]),
    run: (sql, ...params) => using(async (c) => (await c.query(numbered(sql), params)).rowCount ?? 0),
    async blockWrites() {
      const holder = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
      await holder.connect();
      await holder.query(`SELECT pg_advisory_lock(${WRITES_LOCK})`);
      const publicTables = async (c: pg.Client) => (await tables(c)).rows.map((t) => t.name).filter((t) => t.startsWith("public."));
      await using(async (c) => {
        await c.query(WAIT_FOR_WRITES);
        for (const t of await publicTables(c)) await c.query(`CREATE TRIGGER wait_for_writes BEFORE INSERT OR UPDATE OR DELETE ON ${t} EXECUTE FUNCTION wait_for_writes()`);
      });
      return {
        async release() {
          // The waiting writes go on first; dropping a trigger waits for them.
          await holder.end();
          await using(async (c) => {
            for (const t of await publicTables(c)) await c.query(`DROP TRIGGER IF EXISTS wait_for_writes ON ${t}`);
          });
        },
      };
    },
    contents: () =>
      using(async (c) => {
        const out: string[] = [];
        for (const { name } of (await tables(c)).rows) for (const row of (await c.query(`SELECT t::text AS row FROM ${name} t`)).rows) out.push(row.row);
        return out.join("\n");
      }),
    cleanup,
  };
}

function buildEnv(overlay: EnvOverlay): Record<string, string> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of CONFIG_VARS) delete env[name];
  Object.assign(env, overlay);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  return out;
}

/** Collects a child's output stream as text while it runs. */
class Collected {
  text = "";
  readonly done: Promise<void>;
  constructor(stream: ReadableStream<Uint8Array>) {
    this.done = this.pump(stream);
  }
  private async pump(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) this.text += decoder.decode(chunk, { stream: true });
    } catch {
      // The stream ends abruptly when the process is killed; what was read stays.
    }
    this.text += decoder.decode();
  }
}

const live = new Set<Subprocess>();

function killGroup(proc: Subprocess): void {
  // Only a group we have not reaped yet: a reaped leader's id may be reused.
  if (!live.has(proc)) return;
  try {
    process.kill(-proc.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
  try {
    proc.kill("SIGKILL");
  } catch {
    // Already gone.
  }
  live.delete(proc);
}

// A crashed test run must not leave servers behind.
process.on("exit", () => {
  for (const proc of [...live]) killGroup(proc);
});

function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: Timer | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((res) => {
    timer = setTimeout(() => res(TIMED_OUT), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
const TIMED_OUT = Symbol("timed out");

function describeOutput(stdout: string, stderr: string): string {
  return `\n--- stdout ---\n${stdout.slice(-4000)}\n--- stderr ---\n${stderr.slice(-4000)}`;
}

export interface Server {
  /** e.g. http://127.0.0.1:43121 */
  url: string;
  /** The key to use: the one passed in API_KEYS, else the one the server printed, else "". */
  apiKey: string;
  /** The database it runs on. */
  db: TestDatabase;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly stdout: string;
  readonly stderr: string;
  /** Sends the signal and waits (bounded) for the process to exit; returns its exit code. */
  stop(signal?: "SIGTERM" | "SIGINT"): Promise<number>;
  /** SIGKILL to the whole process group; safe to call more than once. */
  kill(): void;
  /**
   * fetch relative to url, with Authorization: Bearer <key> unless headers set one;
   * key defaults to apiKey, null sends no Authorization header.
   */
  fetch(path: string, init?: RequestInit, key?: string | null): Promise<Response>;
}

export interface StartOptions {
  /** Extra or overriding environment (`undefined` removes a variable). */
  env?: EnvOverlay;
  /** Default: a new one of the run's dialect (testDatabase()). */
  db?: TestDatabase;
  /** The key put in API_KEYS; default a new one; null starts the server with no API_KEYS. */
  apiKey?: string | null;
  /** `bun run start MODE`: `api` (no workflows) or `worker` (no HTTP); default both. */
  mode?: "api" | "worker";
  /** The installation `bun run start` runs in; default this checkout (ROOT). */
  cwd?: string;
}

export interface Spawned {
  proc: Subprocess<"ignore", "pipe", "pipe">;
  readonly stdout: string;
  readonly stderr: string;
  /** Waits (bounded) for exit and for all output; kills the group on time-out. */
  exited(ms?: number): Promise<number>;
  /** Sends the signal and waits (bounded) for the exit code. */
  stop(signal?: "SIGTERM" | "SIGINT"): Promise<number>;
  kill(): void;
}

/** Starts `bun run start` without waiting for it to listen. */
export async function spawnServer(opts: StartOptions = {}): Promise<Spawned & { db: TestDatabase; apiKey: string | null }> {
  const db = opts.db ?? (await testDatabase());
  const apiKey = opts.apiKey === undefined ? newApiKey() : opts.apiKey;
  const env = buildEnv({
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: db.url,
    API_KEYS: apiKey ?? "",
    WORKFLOWS_DIR: "off",
    MEDIA_STORE: join(db.dir, "media"),
    RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "info",
    // No drain on SIGTERM unless a test is about it: every test stops its servers.
    SHUTDOWN_DRAIN_MS: "0",
    ...opts.env,
  });
  // Object.assign keeps the stdout/stderr getters alive (a spread would freeze them).
  return Object.assign(spawnBun(["run", "--silent", "start", ...(opts.mode ? [opts.mode] : [])], env, opts.cwd), { db, apiKey });
}

function spawnBun(args: string[], env: Record<string, string>, cwd = ROOT): Spawned {
  const proc = Bun.spawn(["bun", ...args], {
    cwd,
    env,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
  });
  live.add(proc);
  const out = new Collected(proc.stdout);
  const err = new Collected(proc.stderr);
  const kill = () => killGroup(proc);
  return {
    proc,
    get stdout() {
      return out.text;
    },
    get stderr() {
      return err.text;
    },
    kill,
    stop(signal = "SIGTERM") {
      try {
        proc.kill(signal);
      } catch {
        // Already gone: exited() reports how it ended.
      }
      return this.exited(STOP_MS);
    },
    async exited(ms = CLI_MS) {
      const code = await within(proc.exited, ms);
      if (code === TIMED_OUT) {
        kill();
        await within(Promise.all([out.done, err.done]), 2000);
        throw new Error(`bun ${args.join(" ")} did not exit within ${ms} ms` + describeOutput(out.text, err.text));
      }
      live.delete(proc);
      // Reap a child that outlived `bun run`, then take the rest of the output.
      try {
        process.kill(-proc.pid, "SIGKILL");
      } catch {
        // Group already empty.
      }
      await within(Promise.all([out.done, err.done]), 2000);
      return code;
    },
  };
}

/** Starts the server and waits (at most 15 s) until it logs that it is listening. */
/**
 * The servers and databases of one test file: `boot` starts a server (on a database of its
 * own unless given one), `track` keeps a database; after the file the servers are killed
 * and the databases dropped together (on PostgreSQL each drop waits for a checkpoint).
 */
export function fileServers(): { boot(opts?: StartOptions): Promise<Server>; track(db: TestDatabase): TestDatabase } {
  const dbs: TestDatabase[] = [];
  const servers: Server[] = [];
  afterAll(async () => {
    for (const s of servers) s.kill();
    await Promise.all(dbs.map((db) => db.cleanup()));
  }, 120_000);
  const track = (db: TestDatabase) => (dbs.push(db), db);
  return {
    track,
    async boot(opts = {}) {
      const server = await startServer(opts);
      servers.push(server);
      if (!opts.db) track(server.db);
      return server;
    },
  };
}

export async function startServer(opts: StartOptions = {}): Promise<Server> {
  const child = await spawnServer(opts);
  const deadline = Date.now() + STARTUP_MS;
  let url: string | undefined;
  while (url === undefined) {
    const match = LISTENING.exec(child.stdout);
    if (match?.[1]) {
      url = match[1];
      break;
    }
    if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
      await within(child.exited(), 2000);
      throw new Error(`server exited (code ${child.proc.exitCode}) before listening` + describeOutput(child.stdout, child.stderr));
    }
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`server did not log "listening on" within ${STARTUP_MS} ms` + describeOutput(child.stdout, child.stderr));
    }
    await Bun.sleep(20);
  }
  const printed = child.stdout.match(KEY_PATTERN)?.[0];
  const apiKey = child.apiKey ?? printed ?? "";
  const base = url;
  return {
    url: base,
    apiKey,
    db: child.db,
    proc: child.proc,
    get stdout() {
      return child.stdout;
    },
    get stderr() {
      return child.stderr;
    },
    kill: child.kill,
    stop: (signal) => child.stop(signal),
    fetch(path, init = {}, key = apiKey) {
      const headers = new Headers(init.headers);
      if (!headers.has("authorization") && key) headers.set("authorization", `Bearer ${key}`);
      return fetch(base + path, { ...init, headers });
    },
  };
}

/** Waits (bounded at 10 s) for a killed process to be gone. */
export async function gone(p: { proc: Subprocess }): Promise<void> {
  const exited = await Promise.race([p.proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)]);
  if (!exited) throw new Error("the killed process did not exit within 10 s");
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bun run textwire ...args` (bounded at 15 s) with the test environment plus env. */
export async function runCli(args: string[], env: EnvOverlay = {}): Promise<CliResult> {
  const child = spawnBun(
    ["run", "--silent", "textwire", ...args],
    buildEnv({ WORKFLOWS_DIR: "off", LOG_LEVEL: "info", ...env }),
  );
  const code = await child.exited(CLI_MS);
  return { code, stdout: child.stdout, stderr: child.stderr };
}

/** Non-empty lines of a text. */
export function lines(text: string): string[] {
  return text.split(/\r?\n/).filter((l) => l.trim() !== "");
}

/**
 * Calls `check` until it returns something other than undefined or false, at most `ms`
 * (default 10 s); then fails naming `what`.
 */
export function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  ms = 10_000,
): Promise<T> {
  return waitFor(what, ms, check);
}

/** Polls `probe` until it returns something truthy; fails after `ms` with `context()` (bounded). */
export async function waitFor<T>(
  what: string,
  ms: number,
  probe: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  context: () => string = () => "",
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}\n${context().slice(-6000)}`);
    await Bun.sleep(20);
  }
}
