// Every statement written once (src/db/sql.ts) compiles for both dialects and each database
// prepares it: a statement a method only picks per call (`choose`) is checked here too.
import { describe, expect, test } from "bun:test";
import type { PostgresStorage } from "../../src/db/postgres/storage";
import { forPostgres, forSqlite, statementsOf, type Method, type Sql } from "../../src/db/sql";
import type { SqliteStorage } from "../../src/db/sqlite/storage";
import { dialects, storages } from "./helpers";

const isStatement = (v: unknown): v is Sql<unknown> => typeof v === "object" && v !== null && typeof (v as Sql).text === "string" && typeof (v as Sql).name === "string";
const isMethod = (v: unknown): v is Method<never, unknown> => typeof v === "object" && v !== null && "statement" in v && "result" in v;

/** The statements of every module beside sql.ts: those exported, and those of its declared methods. */
async function shared(): Promise<Sql<unknown>[]> {
  const found = new Set<Sql<unknown>>();
  for (const file of new Bun.Glob("*.ts").scanSync({ cwd: `${import.meta.dir}/../../src/db` })) {
    for (const value of Object.values(await import(`../../src/db/${file}`))) {
      if (isStatement(value)) found.add(value);
      else if (typeof value === "object" && value !== null && Object.values(value).some(isMethod)) {
        for (const m of Object.values(value).filter(isMethod)) for (const s of statementsOf(m)) found.add(s);
      }
    }
  }
  return [...found];
}

describe.each(dialects)("on $name", (dialect) => {
  const fresh = storages(dialect);

  test("every shared statement, chosen ones included, compiles and is prepared", async () => {
    const statements = await shared();
    expect(statements.map((s) => s.name)).toEqual(expect.arrayContaining(["messages.setStatus.delivered", "idempotency.restart", "webhooks.eventsOfType", "messages.inboundFromAfter"]));
    const storage = await fresh();
    if (storage.dialect === "sqlite") {
      for (const s of statements) expect(() => (storage as SqliteStorage).sqlite.prepare(forSqlite(s).text), s.name).not.toThrow();
      return;
    }
    const client = await (storage as PostgresStorage).pool.connect();
    try {
      for (const [i, s] of statements.entries()) {
        const failed = await client.query(`PREPARE checked_${i} AS ${forPostgres(s).text}`).then(() => undefined, (err: Error) => err.message);
        expect(failed, s.name).toBeUndefined();
      }
      await client.query("DEALLOCATE ALL");
    } finally {
      client.release();
    }
  });
});

test("what SQLite cannot take is refused when compiled, whatever its case", () => {
  expect(() => forSqlite({ name: "nested", text: "SELECT 1 WHERE id = ANY(coalesce($ids::text[], '{}'))" })).toThrow(/not translated for SQLite/);
  expect(() => forSqlite({ name: "literal", text: "SELECT '::1'" })).toThrow(/not translated for SQLite/);
  expect(forSqlite({ name: "lower", text: "SELECT 1 WHERE id = any($ids::text[])" }).text).toBe("SELECT 1 WHERE id IN (SELECT value FROM json_each($ids))");
});
