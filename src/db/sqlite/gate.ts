import type { Repositories } from "../port";

/**
 * The lock of SQLite's unit of work. bun:sqlite runs statements synchronously on one
 * connection, so while a transaction's callback awaits, any other statement on that
 * connection would run inside the transaction. A transaction holds the gate from BEGIN to
 * COMMIT or ROLLBACK; a statement outside one runs at once when the gate is free and waits
 * its turn (first come, first served) otherwise.
 */
export class Gate {
  #held = false;
  readonly #waiting: (() => void)[] = [];

  get held(): boolean {
    return this.#held;
  }

  /** Resolves once the caller holds the gate. */
  take(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Hands the gate to the next waiter, or frees it. */
  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }

  /** Runs synchronous `fn` holding the gate: at once when it is free (nothing can run in between), else at its turn. */
  run<T>(fn: () => T): T | Promise<T> {
    if (!this.#held) return fn();
    return this.take().then(() => {
      try {
        return fn();
      } finally {
        this.give();
      }
    });
  }
}

/** How long a write waits for another process's write lock before failing with SQLITE_BUSY (answered 503). */
export const BUSY_LIMIT_MS = 5_000;

/**
 * Tries `attempt` again, after pauses growing to 50 ms, while it fails with SQLITE_BUSY, for up
 * to `limitMs`, then throws that error. The connection's busy_timeout is 0: waiting for another
 * process's lock happens here, between tries, never inside SQLite on the event loop. A try that
 * failed busy must have written nothing (each repository method is one statement or its own
 * transaction; the unit of work retries its BEGIN IMMEDIATE).
 */
export async function whileBusy<T>(attempt: () => T | Promise<T>, limitMs: number): Promise<T> {
  const deadline = Date.now() + limitMs;
  for (let pause = 1; ; pause = Math.min(2 * pause, 50)) {
    try {
      return await attempt();
    } catch (err) {
      if (!String((err as { code?: unknown } | undefined)?.code).startsWith("SQLITE_BUSY") || Date.now() + pause > deadline) throw err;
    }
    await Bun.sleep(pause);
  }
}

/** A repository whose methods answer synchronously: what the SQLite repositories are before the gate. */
export type Sync<R> = { [K in keyof R]: R[K] extends (...args: infer A) => Promise<infer T> ? (...args: A) => T : never };
/** Every repository as bun:sqlite runs it: synchronous, before the gate. */
export type SyncRepositories = { [K in keyof Repositories]: Sync<Repositories[K]> };

/**
 * The repository outside a transaction: each call runs at once when the gate is free (the
 * hot path), else once it is its turn; one that meets another process's write lock is
 * tried again (whileBusy) without holding the gate meanwhile, so reads go on.
 */
export function gated<R extends object>(repository: Sync<R>, gate: Gate, busyLimitMs: number): R {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, method] of Object.entries(repository) as [string, (...args: unknown[]) => unknown][]) {
    out[name] = (...args) => whileBusy(() => gate.run(() => method(...args)), busyLimitMs);
  }
  return out as R;
}

/** The repository inside a transaction, whose caller holds the gate; `open` tells whether a transaction is. */
export function inTransaction<R extends object>(repository: Sync<R>, open: () => boolean): R {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, method] of Object.entries(repository) as [string, (...args: unknown[]) => unknown][]) {
    out[name] = async (...args) => {
      if (!open()) throw new Error(`${name}: a transaction's repositories were used after it ended`);
      return method(...args);
    };
  }
  return out as R;
}
