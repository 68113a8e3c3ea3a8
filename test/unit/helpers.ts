import { afterAll, afterEach } from "bun:test";
import type { Dialect, NewMessage, Storage } from "../../src/db/port";
import { openPostgresStorage, type PostgresStorage } from "../../src/db/postgres/storage";
import { openSqliteStorage, type SqliteStorage } from "../../src/db/sqlite/storage";
import { createLogger } from "../../src/log";
import { createLoopbackNetwork } from "../../src/network/loopback";
import type { NetworkCapabilities } from "../../src/vocabulary/network";
import type { LineRow } from "../../src/db/lines";
import type { Line, LineRegistry } from "../../src/lines/registry";
import type { NetworkDriver } from "../../src/network/driver";
import { DEFAULT_LINE_ID, type LineNetwork, type LineRef } from "../../src/vocabulary/lines";
import { createTestDatabase, postgresEnabled, type TestDatabase } from "../support/postgres";

/** A database the unit tests run on; each test file runs its storage tests once per entry of `dialects`. */
export interface TestDialect {
  readonly name: Dialect;
  /**
   * A fresh, migrated storage with no rows. With `clock` (µs since the epoch), the
   * dialect's every time comes from it: only where `movableClock` says so.
   */
  open(opts?: { clock?: () => number }): Promise<Storage>;
  /** Whether `open` takes a clock the test moves (SQLite: the process clock is its database's). */
  readonly movableClock: boolean;
  /** The rows of a plain SELECT on a storage `open` gave, to check what is (not) stored. */
  rows(storage: Storage, select: string): Promise<Record<string, unknown>[]>;
  /** Frees what the dialect's storages shared once a describe block is done with them. */
  finish?(): Promise<void>;
}

const sqlite: TestDialect = {
  name: "sqlite",
  open: async (opts) => openSqliteStorage(":memory:", opts),
  movableClock: true,
  rows: async (storage, select) => (storage as SqliteStorage).sqlite.query(select).all() as Record<string, unknown>[],
};

/**
 * PostgreSQL from TEST_DATABASE_URL: one fresh database a describe block, emptied for each
 * storage opened on it; a storage opened while another is still open gets a database of its own.
 */
function postgresDialect(): TestDialect {
  let shared: Promise<TestDatabase> | undefined;
  const inUse = new Set<Storage>();
  return {
    name: "postgres",
    movableClock: false,
    async open() {
      const own = inUse.size > 0;
      const database = own ? await createTestDatabase() : await (shared ??= createTestDatabase());
      const storage = await openPostgresStorage(database.url, 10);
      if (!own) {
        const { rows } = await storage.pool.query<{ name: string }>(
          `SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('message_clock', 'event_clock')`,
        );
        await storage.pool.query(`${rows.map((r) => `DELETE FROM ${r.name};`).join(" ")} UPDATE message_clock SET t = 0; UPDATE event_clock SET t = 0`);
      }
      inUse.add(storage);
      const close = storage.close;
      return Object.assign(storage, {
        async close() {
          inUse.delete(storage);
          await close();
          if (own) await database.drop();
        },
      });
    },
    rows: async (storage, select) => (await (storage as PostgresStorage).pool.query(select)).rows,
    async finish() {
      const database = await shared;
      shared = undefined;
      await database?.drop();
    },
  };
}

/** Every dialect under test: `describe.each(dialects)("on $name", (dialect) => …)`. */
export const dialects: TestDialect[] = postgresEnabled() ? [sqlite, postgresDialect()] : [sqlite];

/** The dialects whose clock a test can move (expiry after hours, clocks that jump back). */
export const clockDialects = dialects.filter((d) => d.movableClock);

/**
 * A factory of fresh storages of `dialect`, each closed after its test. Call it once per
 * describe block (it registers that block's afterEach).
 */
export function storages(dialect: TestDialect): (opts?: { clock?: () => number }) => Promise<Storage> {
  const opened: Storage[] = [];
  // Closing and dropping a PostgreSQL database can take seconds on a loaded machine.
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  }, 60_000);
  afterAll(async () => {
    await dialect.finish?.();
  }, 60_000);
  return async (opts) => {
    const storage = await dialect.open(opts);
    opened.push(storage);
    return storage;
  };
}

/** A clock the test moves by hand: `clock.t` is what `now()` returns. */
export function manualClock(start = Date.UTC(2026, 10, 21, 9, 30, 0, 0)) {
  const clock = { t: start, now: () => clock.t };
  return clock;
}

/** The value `fn` throws; fails the test when it returns normally. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected the call to throw, but it returned");
}

/** The reason `promise` rejects with; fails the test when it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error("expected the promise to reject, but it resolved");
}

/** A logger that writes nothing, for service functions under test. */
export const quietLog = createLogger("error", {}, () => {});

/** The capabilities of a fake network that only sends text. */
export const TEXT_ONLY: NetworkCapabilities = { reactions: false, typing: false, read_receipts: false, edit: false, unsend: false, groups: false, media: false, threads: false };

let rowSeq = 0;
/** A message as a send stores it: outbound and `queued`, to +14155550123 over loopback, with an id of its own; `extra` overrides. */
export const outboundRow = (extra: Partial<NewMessage> = {}): NewMessage => ({
  id: `out-${++rowSeq}`,
  phone: "+14155550123",
  body: "hello",
  direction: "outbound",
  status: "queued",
  network: "loopback",
  networkId: null,
  ...extra,
});
/** A message as the loopback webhook stores it: inbound and `received`, from +14155550123, with an id of its own; `extra` overrides. */
export const inboundRow = (extra: Partial<NewMessage> = {}): NewMessage => outboundRow({ id: `in-${++rowSeq}`, body: "hi", direction: "inbound", status: "received", ...extra });

/**
 * The lines of a deployment with one line (the environment's, `ln_default`) whose driver is
 * `driver`: what the service tests pass where a process has its registry (src/lines/registry.ts).
 * `more` adds lines of other drivers, each named by its driver's name.
 */
export function oneLine(driver: NetworkDriver, ...more: NetworkDriver[]): LineRegistry {
  const row = (id: string, d: NetworkDriver, isDefault: boolean): LineRow => ({
    id,
    name: id === DEFAULT_LINE_ID ? "default" : d.name,
    network: d.name as LineNetwork,
    address: null,
    enabled: true,
    isDefault,
    fallback: null,
    settings: "{}",
    credentials: null,
    managed: id === DEFAULT_LINE_ID ? "env" : "api",
    createdAt: 0,
    updatedAt: 0,
  });
  const lines: Line[] = [driver, ...more].map((d, i) => ({ row: row(i === 0 ? DEFAULT_LINE_ID : `ln_${d.name}`, d, i === 0), settings: {}, driver: d }));
  return {
    all: () => lines,
    find: (ref) => lines.find((l) => l.row.id === ref || l.row.name === ref),
    get(id) {
      const found = lines.find((l) => l.row.id === id);
      if (!found) throw new Error(`no line ${id}`);
      return found;
    },
    default: () => lines[0]!,
    refresh: async () => false,
  };
}

/** The environment's line as stored messages name it, on `network`. */
export const envLineOf = (network: string): LineRef => ({ id: DEFAULT_LINE_ID, network });

/** What history and poll read with: the storage, on a deployment of one loopback line. */
export const reader = (storage: Storage) => ({ storage, lines: oneLine(createLoopbackNetwork()) });
