import type { Database, SQLQueryBindings } from "bun:sqlite";
import { forSqlite, statementsOf, type Bound, type Method, type Params, type Sql } from "../sql";

/** A statement prepared on SQLite: the caller's parameters, plus the clock's and JSON lists (src/db/sql.ts). */
interface Prepared<R> {
  all(params?: Params): R[];
  get(params?: Params): R | undefined;
  run(params?: Params): number;
}

/** Prepares statements on one connection, each once; `clock` counts microseconds. */
export function statements(sqlite: Database, clock: () => number) {
  const cache = new Map<Sql<unknown>, Prepared<unknown>>();

  function prepare<R>(statement: Sql<R>): Prepared<R> {
    const found = cache.get(statement);
    if (found) return found as Prepared<R>;
    const { text, clock: timed, lists } = forSqlite(statement);
    const s = sqlite.prepare<R, [SQLQueryBindings]>(text);
    // A copy: the caller's parameters stay as given.
    const bind = (given: Params = {}) => {
      const params = { ...given };
      if (timed) {
        const t = clock();
        params.nowUs = t;
        params.now = Math.floor(t / 1000);
      }
      for (const name of lists) if (params[name] != null) params[name] = JSON.stringify(params[name]);
      return params as SQLQueryBindings;
    };
    const prepared: Prepared<R> = {
      all: (params) => s.all(bind(params)),
      get: (params) => s.get(bind(params)) ?? undefined,
      run: (params) => s.run(bind(params)).changes,
    };
    cache.set(statement, prepared);
    return prepared;
  }

  /** Each of `named` prepared, under its name. */
  const prepareAll = <T extends Record<string, Sql<unknown>>>(named: T) =>
    Object.fromEntries(Object.entries(named).map(([name, s]) => [name, prepare(s)])) as { [K in keyof T]: Prepared<NonNullable<T[K]["row"]>> };

  /** Declared methods (src/db/sql.ts) as synchronous ones. */
  function bind<D extends Record<string, Method<never, unknown>>>(methods: D): Bound<D, true> {
    const out: Record<string, (...args: unknown[]) => unknown> = {};
    for (const [name, m] of Object.entries(methods) as [string, Method<unknown[], unknown>][]) {
      // Every statement the method may run is prepared now: one SQLite cannot take fails at start.
      const [first] = statementsOf(m).map(prepare);
      const { statement } = m;
      const read = m.read as (result: unknown, args: unknown[]) => unknown;
      out[name] = (...args) => {
        const s = "among" in statement ? prepare(statement.pick(...args)) : first!;
        return read(s[m.result](m.params(...args)), args);
      };
    }
    return out as Bound<D, true>;
  }

  return { prepareAll, bind };
}
