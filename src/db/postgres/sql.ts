import type pg from "pg";

/**
 * A named SQL statement: pg prepares it once per connection and reuses the plan. `R` is
 * the row it returns, under the port's names (quoted aliases keep their case).
 */
export interface Statement<R extends pg.QueryResultRow = pg.QueryResultRow> {
  readonly name: string;
  readonly text: string;
  readonly row?: R;
}

export const statement = <R extends pg.QueryResultRow = pg.QueryResultRow>(name: string, text: string): Statement<R> => ({ name, text });

/** Runs a statement on the pool (one statement, autocommit) or on a transaction's connection. */
export type Run = <R extends pg.QueryResultRow>(statement: Statement<R>, values: unknown[]) => Promise<pg.QueryResult<R>>;

/** The database's clock, in milliseconds since the epoch (the time of the statement's transaction). */
export const NOW_MS = `floor(extract(epoch FROM now()) * 1000)::bigint`;
/** The database's clock, in microseconds since the epoch, read when evaluated. */
export const NOW_US = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;
