/**
 * The storage port: everything the domain (src/messages, src/workflows, src/auth,
 * src/generator, the network drivers' small state) asks of a database, and nothing about
 * which database. `await openStorage(url)` (src/db/index.ts) opens, migrates and returns a
 * `Storage`, or throws DatabaseError (src/db/errors.ts); src/db/sqlite and src/db/postgres
 * implement it, each with its own Drizzle schema and migrations. No
 * file outside those two folders imports a database driver or a Drizzle dialect. Each
 * aggregate's rows and repository are declared beside the SQL both dialects share
 * (src/db/messages.ts, src/db/webhooks.ts, …; how, in src/db/sql.ts).
 *
 * Shape: one repository per aggregate (Repositories) and a unit of work, `storage.transaction(async (tx) => …)`,
 * whose `tx` has the same repositories bound to one transaction. Every method is async.
 *
 * Rules every implementation keeps (the tests in test/unit run against each):
 *
 * - Only SQL lives in an implementation. Decisions (whether an idempotency key replays
 *   or conflicts, how a finished run moves the cursor and backoff) live once in the
 *   domain, built from these primitives inside `storage.transaction`. The status rule is
 *   the exception that proves it: implementations import the pure rule of
 *   src/vocabulary/message-status.ts and turn it into one conditional UPDATE.
 * - A method outside a transaction is atomic on its own. Methods documented as "one
 *   statement" are a single conditional statement (INSERT … ON CONFLICT DO NOTHING,
 *   UPDATE … WHERE <condition>), so two processes racing on them never both win; their
 *   boolean or count result says whether this call won.
 * - Times that decide something (lease and lock expiry, idempotency lifetimes, backoff,
 *   stale sends, retention) are computed inside the implementation from the database's
 *   clock (PostgreSQL: now()/clock_timestamp(); SQLite: the process clock, since every
 *   process is on one machine). The domain passes durations, never "now".
 * - Message timestamps are microseconds since the epoch, unique and strictly increasing
 *   in commit order across every process: a reader that follows `timestamp > cursor`
 *   never misses a row committed later with a smaller timestamp (the poll cursor rule,
 *   docs/api.md). Other times (`…At`, `…Until`, `sendAt`) are milliseconds since the epoch.
 * - Inside `transaction(fn)`, `fn` uses only `tx`, never the outer storage (on SQLite the
 *   outer one waits for the transaction to end: a deadlock; on PostgreSQL it is another
 *   connection), and `tx` is not used once `fn` has settled. A throw rolls everything back.
 */
import type { ApiKeyRepository } from "./api-keys";
import type { ChatRepository } from "./chats";
import type { ContactRepository } from "./contacts";
import type { GenerationRepository } from "./generations";
import type { IdempotencyRepository } from "./idempotency";
import type { LeaseRepository } from "./leases";
import type { LineRepository } from "./lines";
import type { MessageRepository } from "./messages";
import type { NetworkStateRepository } from "./network-state";
import type { RetentionRepository } from "./retention";
import type { SessionRepository } from "./sessions";
import type { EventRepository, WebhookRepository } from "./webhooks";
import type { WorkflowRepository } from "./workflows";

export type * from "./api-keys";
export type * from "./chats";
export type * from "./contacts";
export type * from "./generations";
export type * from "./idempotency";
export type * from "./leases";
export type * from "./lines";
export type * from "./messages";
export type * from "./network-state";
export type * from "./retention";
export type * from "./sessions";
export type * from "./webhooks";
export type * from "./workflows";

/** How long GET /health waits for the database to take a write (it must answer within 2 s). */
export const WRITE_CHECK_MS = 1_800;

export type Dialect = "sqlite" | "postgres";

export interface Repositories {
  readonly messages: MessageRepository;
  readonly chats: ChatRepository;
  readonly contacts: ContactRepository;
  readonly idempotency: IdempotencyRepository;
  readonly workflows: WorkflowRepository;
  readonly leases: LeaseRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly sessions: SessionRepository;
  readonly generations: GenerationRepository;
  readonly networkState: NetworkStateRepository;
  readonly lines: LineRepository;
  readonly webhooks: WebhookRepository;
  readonly events: EventRepository;
  readonly retention: RetentionRepository;
}

export interface Storage extends Repositories {
  readonly dialect: Dialect;

  /**
   * Runs `fn` in one transaction: all of it commits, or a throw rolls all of it back and
   * rethrows. Writes are serialised with every other writer from the first write (SQLite:
   * BEGIN IMMEDIATE; PostgreSQL: row locks, READ COMMITTED), and rows read with
   * `lockForDecision` or `lockForUpdate` stay locked until the end. See the rules above:
   * `fn` uses only `tx`.
   */
  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T>;

  /**
   * Whether the database takes a write now (GET /health): answers within WRITE_CHECK_MS, false
   * when it is read-only, locked for that long or unreachable. Never throws.
   */
  takesWrite(): Promise<boolean>;

  /** PostgreSQL: the pool's connections now, open, idle and requests waiting for one (metrics); absent on SQLite, which has one. */
  connections?(): { total: number; idle: number; waiting: number };

  /** Closes the connection(s); the storage is not used afterwards. */
  close(): Promise<void>;
}
