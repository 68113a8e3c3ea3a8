import { afterEach } from "bun:test";
import { openDb, type Db } from "../../src/db/client";
import { createLogger } from "../../src/log";
import { createMessageStore, type MessageStore } from "../../src/messages/store";

/**
 * A factory of fresh, migrated in-memory databases, each closed after its test.
 * Call it once at the top of a test file (it registers that file's afterEach).
 */
export function memoryDbs(): () => Db {
  const opened: Db[] = [];
  afterEach(() => {
    for (const db of opened.splice(0)) db.$client.close();
  });
  return () => {
    const db = openDb(":memory:");
    opened.push(db);
    return db;
  };
}

/** A clock the test moves by hand: `clock.t` is what `now()` returns. */
export function manualClock(start = Date.UTC(2026, 10, 21, 9, 30, 0, 0)) {
  const clock = { t: start, now: () => clock.t };
  return clock;
}

/** A message store on `db`, driven by a manual clock. */
export function storeWithClock(db: Db, start?: number): { db: Db; store: MessageStore; clock: ReturnType<typeof manualClock> } {
  const clock = manualClock(start);
  return { db, store: createMessageStore(db, clock.now), clock };
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
