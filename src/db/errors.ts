/**
 * The database cannot be used; `message` is one line naming DATABASE_URL and the cause
 * (any password in a URL redacted). Thrown by `openStorage` (src/db/index.ts) of every dialect.
 */
export class DatabaseError extends Error {
  override name = "DatabaseError";
}
