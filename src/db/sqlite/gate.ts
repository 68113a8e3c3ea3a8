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
}

/** A repository whose methods answer synchronously: what the SQLite repositories are before the gate. */
export type Sync<R> = { [K in keyof R]: R[K] extends (...args: infer A) => Promise<infer T> ? (...args: A) => T : never };

/**
 * The repository outside a transaction: each call runs at once when the gate is free (no
 * wait beyond the async function itself: the hot path), else once it is its turn.
 */
export function gated<R extends object>(repository: Sync<R>, gate: Gate): R {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, method] of Object.entries(repository) as [string, (...args: unknown[]) => unknown][]) {
    out[name] = async (...args) => {
      if (!gate.held) return method(...args);
      await gate.take();
      try {
        return method(...args);
      } finally {
        gate.give();
      }
    };
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

/** A port row type as bun:sqlite bindings (an interface has no index signature; this copy does). */
export type Bindings<T> = { [K in keyof T]: T[K] };
