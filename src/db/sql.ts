/**
 * SQL written once for both dialects. A statement is PostgreSQL-flavoured text with named
 * parameters (`$id`) and a few tokens for what differs, compiled once per dialect when the
 * storage opens (src/db/sqlite/statements.ts, src/db/postgres/sql.ts):
 *
 * - `{now_ms}`, `{now_us}`: the database's clock in ms / µs. PostgreSQL: now() (the
 *   transaction's time) / clock_timestamp(); SQLite: `$now` / `$nowUs`, bound per call from
 *   the process clock (every process is on one machine).
 * - `{for_update}`: FOR UPDATE on PostgreSQL; nothing on SQLite, whose write transaction
 *   already holds every row.
 * - `{random_hex}`: 32 random hex digits, as the migrations' triggers make ids.
 * - `= ANY(x)`, `<> ALL(x)`: over a JSON array (json_each) on SQLite.
 * - `::type` casts are dropped on SQLite; a parameter cast to an array type (`$ids::text[]`)
 *   is bound as a JSON array there.
 * - Aliases are quoted (`AS "networkId"`), which both read alike; booleans come back as 0/1
 *   from SQLite, so rows with one are read through `Boolean`.
 *
 * A repository method is declared once as a statement, its parameters and how its answer
 * is read from the rows or the count (`all`, `get`, `run`); each dialect turns the
 * declarations into methods: synchronous ones on SQLite (gated by src/db/sqlite/gate.ts),
 * async ones on PostgreSQL.
 */

export type Row = Record<string, unknown>;
export type Params = Record<string, unknown>;

/** A statement; `R` is its row under the port's names. `name` names PostgreSQL's prepared statement. */
export interface Sql<R = Row> {
  readonly name: string;
  readonly text: string;
  readonly row?: R;
}

export const sql = <R = Row>(name: string, text: string): Sql<R> => ({ name, text });

const CLOCK_MS = /\{now_ms\}/g;
const CLOCK_US = /\{now_us\}/g;
const ARRAY_CAST = /\$(\w+)::\w+\[\]/g;

/** The statement as bun:sqlite prepares it, and what to bind besides the caller's parameters. */
export function forSqlite(statement: Sql<unknown>): { text: string; clock: boolean; lists: string[] } {
  const lists = [...new Set([...statement.text.matchAll(ARRAY_CAST)].map((m) => m[1]!))];
  const text = statement.text
    .replace(CLOCK_MS, "$now")
    .replace(CLOCK_US, "$nowUs")
    .replace(/\{for_update\}/g, "")
    .replace(/\{random_hex\}/g, "lower(hex(randomblob(16)))")
    .replace(/=\s*ANY\s*\(([^()]+)\)/gi, "IN (SELECT value FROM json_each($1))")
    .replace(/<>\s*ALL\s*\(([^()]+)\)/gi, "NOT IN (SELECT value FROM json_each($1))")
    .replace(/::[A-Za-z_]\w*(\[\])?/g, "");
  // What the rewrites above could not take (a nested call, a brace) fails at start, not on first use.
  const left = /(=|<>)\s*(ANY|ALL)\s*\(|::|\{/i.exec(text);
  if (left) throw new Error(`${statement.name || "a SQLite statement"}: "${left[0]}" is not translated for SQLite: ${text}`);
  return { text, clock: text.includes("$now"), lists };
}

/** The database's clock, in milliseconds since the epoch (the time of the statement's transaction). */
export const PG_NOW_MS = `floor(extract(epoch FROM now()) * 1000)::bigint`;
/** The database's clock, in microseconds since the epoch, read when evaluated. */
export const PG_NOW_US = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;

/** The statement as pg prepares it: `$1…$n` in the order `names` gives. */
export function forPostgres(statement: Sql<unknown>): { name: string; text: string; names: string[] } {
  const names: string[] = [];
  const text = statement.text
    .replace(CLOCK_MS, PG_NOW_MS)
    .replace(CLOCK_US, PG_NOW_US)
    .replace(/\{for_update\}/g, "FOR UPDATE")
    .replace(/\{random_hex\}/g, "replace(gen_random_uuid()::text, '-', '')")
    .replace(/\$([A-Za-z_]\w*)/g, (_, name: string) => {
      const at = names.indexOf(name);
      return `$${at >= 0 ? at + 1 : names.push(name)}`;
    });
  return { name: statement.name, text, names };
}

/** A repository method declared once: a statement (or one chosen by the arguments, `choose`), its parameters, how its answer is read. */
export interface Method<A extends unknown[], T> {
  readonly statement: Choose<A, unknown>;
  params(...args: A): Params;
  readonly result: "all" | "get" | "run";
  read(result: never, args: A): T;
}

/** A statement picked per call from a fixed set, so that each dialect compiles the whole set at start. */
export interface Chosen<A extends unknown[], R> {
  readonly among: readonly Sql<R>[];
  pick(...args: A): Sql<R>;
}
export const choose = <A extends unknown[], R>(among: readonly Sql<R>[], pick: (...args: A) => Sql<R>): Chosen<A, R> => ({ among, pick });
type Choose<A extends unknown[], R> = Sql<R> | Chosen<A, R>;

/** Every statement a declared method may run. */
export const statementsOf = (m: Method<never, unknown>): readonly Sql<unknown>[] => ("among" in m.statement ? m.statement.among : [m.statement]);
// Each helper's overloads are its types; the implementations take anything.
const same = <T>(x: T) => x;

/** Every row. */
export function all<A extends unknown[], R>(statement: Choose<A, R>, params: (...args: A) => Params): Method<A, R[]>;
export function all<A extends unknown[], R, T>(statement: Choose<A, R>, params: (...args: A) => Params, read: (rows: R[], args: A) => T): Method<A, T>;
export function all(statement: any, params: any, read: any = same): Method<any, any> {
  return { statement, params, result: "all", read };
}

/** The first row, undefined when none. */
export function get<A extends unknown[], R>(statement: Choose<A, R>, params: (...args: A) => Params): Method<A, R | undefined>;
export function get<A extends unknown[], R, T>(statement: Choose<A, R>, params: (...args: A) => Params, read: (row: R | undefined, args: A) => T): Method<A, T>;
export function get(statement: any, params: any, read: any = same): Method<any, any> {
  return { statement, params, result: "get", read };
}

/** How many rows the statement changed; nothing unless `read` says. */
export function run<A extends unknown[]>(statement: Choose<A, unknown>, params: (...args: A) => Params): Method<A, void>;
export function run<A extends unknown[], T>(statement: Choose<A, unknown>, params: (...args: A) => Params, read: (changes: number, args: A) => T): Method<A, T>;
export function run(statement: any, params: any, read: any = (): void => {}): Method<any, any> {
  return { statement, params, result: "run", read };
}

/** Read helpers: whether exactly one row changed, how many. */
export const changed = (n: number) => n === 1;
export const count = (n: number) => n;

/** A repository's methods declared once, checked against the port's interface `R`. */
export type Declared<R> = { [K in keyof R]?: R[K] extends (...args: infer A) => Promise<infer T> ? Method<A, T> : never };
export const declare = <R>() => <D extends Declared<R>>(methods: D): D => methods;

/** What a dialect makes of declarations `D`: methods answering T (SQLite, before its gate) or Promise<T> (PostgreSQL). */
export type Bound<D, Sync extends boolean> = {
  [K in keyof D]: D[K] extends Method<infer A, infer T> ? (...args: A) => Sync extends true ? T : Promise<T> : never;
};

/** A page read with one row more than `limit`: the rows and whether more follow. */
export function page<R>(rows: R[], limit: number): { rows: R[]; hasMore: boolean } {
  const hasMore = rows.length > limit;
  if (hasMore) rows.pop();
  return { rows, hasMore };
}

/** Rows grouped by a key, in their order. */
export function groupBy<R>(rows: readonly R[], key: (row: R) => string): Map<string, R[]> {
  const found = new Map<string, R[]>();
  for (const row of rows) {
    const list = found.get(key(row));
    if (list) list.push(row);
    else found.set(key(row), [row]);
  }
  return found;
}
