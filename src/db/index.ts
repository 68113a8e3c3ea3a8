import type { Storage } from "./port";
import { openSqliteStorage } from "./sqlite/storage";

export { DatabaseError } from "./errors";
export type * from "./port";
export { backupSqlite, type BackupSummary } from "./sqlite/backup";

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;

/** Whether DATABASE_URL names PostgreSQL (else a SQLite file or `:memory:`). */
export const isPostgresUrl = (url: string) => POSTGRES_URL.test(url);

/**
 * The storage DATABASE_URL names: `postgres://` or `postgresql://` is PostgreSQL, anything
 * else a SQLite file (or `:memory:`). Opened, migrated and checked; throws DatabaseError.
 * `poolSize`: connections to PostgreSQL (DATABASE_POOL_SIZE).
 */
export async function openStorage(url: string, opts: { poolSize?: number } = {}): Promise<Storage> {
  if (isPostgresUrl(url)) {
    // Loaded only when used, so a SQLite process never pays for the driver.
    const { openPostgresStorage } = await import("./postgres/storage");
    return openPostgresStorage(url, opts.poolSize ?? 10);
  }
  return openSqliteStorage(url);
}
