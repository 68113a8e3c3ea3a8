/**
 * The database cannot be used; `message` is one line naming DATABASE_URL and the cause
 * (any password in a URL redacted). Thrown by `openStorage` (src/db/index.ts) of every dialect.
 */
export class DatabaseError extends Error {
  override name = "DatabaseError";
}

/** Error codes that say the database is unreachable or busy now, not that the request is wrong. */
const UNAVAILABLE_CODES = new Set([
  // SQLite: another process held the write lock past the busy limit (src/db/sqlite/gate.ts).
  "SQLITE_BUSY",
  "SQLITE_BUSY_SNAPSHOT",
  "SQLITE_BUSY_TIMEOUT",
  "SQLITE_LOCKED",
  // The connection to a database server.
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  // PostgreSQL (SQLSTATE): too many connections, shutting down, cannot connect now.
  "53300",
  "57P01",
  "57P02",
  "57P03",
]);
const UNAVAILABLE_TEXT = /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|database is locked/i;

/**
 * Whether `err` (or an error it wraps) says the database cannot be reached or is busy: a
 * request that met it is answered 503 with Retry-After, not 500 (docs/api.md, Errors).
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === "object" && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = String((e as { code?: unknown }).code ?? "");
    // SQLSTATE class 08: connection exceptions.
    if (UNAVAILABLE_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
    if (UNAVAILABLE_TEXT.test(String((e as { message?: unknown }).message ?? ""))) return true;
  }
  return false;
}
