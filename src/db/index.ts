import { DatabaseError } from "./errors";
import type { Storage } from "./port";
import { openSqliteStorage } from "./sqlite/storage";

export { DatabaseError } from "./errors";
export type * from "./port";

const POSTGRES_URL = /^postgres(?:ql)?:\/\//i;

/**
 * The storage DATABASE_URL names: `postgres://` or `postgresql://` is PostgreSQL, anything
 * else a SQLite file (or `:memory:`). Opened, migrated and checked; throws DatabaseError.
 */
export async function openStorage(url: string): Promise<Storage> {
  if (POSTGRES_URL.test(url)) throw new DatabaseError("cannot use the database at DATABASE_URL: PostgreSQL support is not built in this version");
  return openSqliteStorage(url);
}
