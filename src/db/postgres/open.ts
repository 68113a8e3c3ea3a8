import { resolve } from "node:path";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { DatabaseError } from "../errors";
import { WRITE_CHECK_MS } from "../port";

const MIGRATIONS = resolve(import.meta.dir, "../../../drizzle/postgres");
/** The advisory lock every process takes to apply migrations (any number unique to Textwire). */
const MIGRATION_LOCK = 7_465_787_477;
/** How long a process waits for a connection before it reports the database unreachable. */
const CONNECT_TIMEOUT_MS = 10_000;
const INT8_OID = 20;

/** DATABASE_URL as it may be printed: any password replaced by `***`. */
export function redactedUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/?#@]*:)[^@/?#]*@/i, "$1***@").replace(/([?&]password=)[^&#]*/gi, "$1***");
}

/** Why PostgreSQL cannot be used, in one line for an operator. */
function causeOf(err: unknown): string {
  const e = err as { code?: string; message?: string; errors?: unknown[]; cause?: unknown };
  // A host that resolves to several addresses fails with each; the first says why.
  if (e.errors?.length && !e.code) return causeOf(e.errors[0]);
  // Drizzle's migrator wraps the server's error ("Failed query: …"): the cause says why.
  if (!e.code && e.cause) return causeOf(e.cause);
  switch (e.code) {
    case "ECONNREFUSED":
      return "connection refused (is PostgreSQL running at that host and port?)";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "the host name does not resolve";
    case "ETIMEDOUT":
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "the host does not answer";
    case "28P01":
    case "28000":
      return `authentication failed: ${e.message}`;
    case "3D000":
      return `${e.message} (create it first, e.g. createdb)`;
    case "42501":
      return `${e.message} (the role needs CREATE on the database and on schema public to apply migrations)`;
    case "25006":
      return "the database is read-only (a standby, or default_transaction_read_only is on)";
    case "53300":
      return "the server has no connection left (max_connections; lower DATABASE_POOL_SIZE or raise it)";
    case "57P03":
      return "the server is starting up or shutting down";
  }
  const message = String(e.message ?? err);
  if (/timeout/i.test(message)) return `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`;
  if (/password must be a string/i.test(message)) return "the server asks for a password and DATABASE_URL gives none";
  return message.split("\n")[0]!;
}

/**
 * Opens a pool of `poolSize` connections, applies pending migrations (one process at a
 * time, under an advisory lock, so processes starting together apply each once) and checks
 * that the database takes a write. Throws DatabaseError naming DATABASE_URL and the cause.
 */
export async function openPostgres(url: string, poolSize: number): Promise<pg.Pool> {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    application_name: "textwire",
    // Every bigint we store (µs and ms times, counts) is a safe integer.
    types: { getTypeParser: (oid: number, format?: string) => (oid === INT8_OID ? Number : pg.types.getTypeParser(oid, format as "text")) },
  });
  // A pooled connection that breaks while idle (server restart) is dropped and replaced on
  // next use; without a listener the pool's error event would end the process.
  pool.on("error", () => {});
  try {
    await migrateLocked(pool);
    await probeWrite(pool, CONNECT_TIMEOUT_MS);
    return pool;
  } catch (err) {
    await pool.end().catch(() => {});
    throw new DatabaseError(`cannot use the database at DATABASE_URL=${JSON.stringify(redactedUrl(url))}: ${causeOf(err)}`);
  }
}

/** A pooled connection held for several statements (a transaction, a lock). */
export interface HeldConnection {
  client: pg.PoolClient;
  /** Gives it back to the pool, or closes it when `failed` (it may be mid-transaction or hold a lock) or broken while held. */
  release(failed?: Error): void;
}

export async function holdConnection(pool: pg.Pool): Promise<HeldConnection> {
  const client = await pool.connect();
  let broken: Error | undefined;
  // A held connection that breaks between statements emits an error event; unheard, it would end the process.
  const onError = (err: Error) => (broken = err);
  client.on("error", onError);
  return {
    client,
    release(failed) {
      client.removeListener("error", onError);
      client.release(failed ?? broken);
    },
  };
}

async function migrateLocked(pool: pg.Pool): Promise<void> {
  const { client, release } = await holdConnection(pool);
  let failed: Error | undefined;
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await migrate(drizzle({ client }), { migrationsFolder: MIGRATIONS });
    } finally {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  } catch (err) {
    failed = err as Error;
    throw err;
  } finally {
    // Closing a connection that failed also frees the lock it may hold.
    release(failed);
  }
}

/** One write, rolled back, all within `ms` (waiting for a pooled connection included): fails when the database does not take writes. */
async function probeWrite(pool: pg.Pool, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  const { client, release } = await holdConnection(pool);
  const left = deadline - Date.now();
  if (left <= 0) {
    release();
    throw new Error("timeout waiting for a connection");
  }
  try {
    // query_timeout (read by pg, missing from its types) ends a probe the server never answers.
    await client.query({
      text: `BEGIN; SET LOCAL statement_timeout = ${left}; SET LOCAL lock_timeout = ${left};
             INSERT INTO network_state (network, key, value) VALUES ('textwire', 'write-check', '')
               ON CONFLICT (network, key) DO UPDATE SET value = excluded.value;
             ROLLBACK`,
      query_timeout: left,
    } as pg.QueryConfig);
  } catch (err) {
    release(err as Error);
    throw err;
  }
  release();
}

/** Storage.takesWrite: a probe still waiting after WRITE_CHECK_MS is abandoned, its connection released when it ends. */
export async function postgresTakesWrite(pool: pg.Pool): Promise<boolean> {
  let timer: Timer | undefined;
  const late = new Promise<false>((done) => (timer = setTimeout(() => done(false), WRITE_CHECK_MS)));
  const probe = probeWrite(pool, WRITE_CHECK_MS).then(() => true, () => false);
  try {
    return await Promise.race([probe, late]);
  } finally {
    clearTimeout(timer);
  }
}
