import type pg from "pg";
import { forPostgres, statementsOf, type Bound, type Method, type Params, type Row, type Sql } from "../sql";

/** Runs a statement with `$1…$n` on the pool (one statement, autocommit) or on a transaction's connection; pg prepares it once per connection by its name. */
export type Run = (statement: Sql<unknown>, values: unknown[]) => Promise<pg.QueryResult>;

const compiled = new Map<Sql<unknown>, ReturnType<typeof forPostgres>>();

/** A statement written once (src/db/sql.ts) as pg runs it, its parameters given by name. */
export function prepare<R = Row>(statement: Sql<R>) {
  let c = compiled.get(statement);
  if (!c) compiled.set(statement, (c = forPostgres(statement)));
  const { names } = c;
  const named = c;
  return async (run: Run, params: Params = {}) => {
    const result = await run(named, names.map((n) => params[n]));
    return { rows: result.rows as R[], count: result.rowCount ?? 0 };
  };
}

/** Declared methods (src/db/sql.ts) as async ones on `run`. */
export function bind<D extends Record<string, Method<never, unknown>>>(run: Run, methods: D): Bound<D, false> {
  const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (const [name, m] of Object.entries(methods) as [string, Method<unknown[], unknown>][]) {
    // Every statement the method may run is compiled now, as on SQLite.
    const [first] = statementsOf(m).map((s) => prepare(s));
    const { statement } = m;
    const read = m.read as (result: unknown, args: unknown[]) => unknown;
    out[name] = async (...args) => {
      const exec = "among" in statement ? prepare(statement.pick(...args)) : first!;
      const { rows, count } = await exec(run, m.params(...args));
      return read(m.result === "all" ? rows : m.result === "get" ? rows[0] : count, args);
    };
  }
  return out as Bound<D, false>;
}
