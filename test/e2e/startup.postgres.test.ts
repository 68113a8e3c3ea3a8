// PostgreSQL at start: processes that open one new database at the same moment apply each
// migration once (an advisory lock orders them), and a database that cannot be used is one
// line naming DATABASE_URL and the cause, its password never shown.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import pg from "pg";
import { DatabaseError } from "../../src/db/errors";
import { openPostgres } from "../../src/db/postgres/open";
import { describePostgres } from "../support/postgres";

const OPEN = resolve(import.meta.dir, "../../src/db/postgres/open.ts");
const JOURNAL = resolve(import.meta.dir, "../../drizzle/postgres/meta/_journal.json");
const migrationCount = (JSON.parse(readFileSync(JOURNAL, "utf8")) as { entries: unknown[] }).entries.length;

describePostgres("migrations", (db) => {
  test("ten processes opening a new database at once apply each migration once", async () => {
    const script = `const { openPostgres } = await import(${JSON.stringify(OPEN)});
      const pool = await openPostgres(process.env.URL, 2);
      await pool.end();
      console.log("opened");`;
    const children = Array.from({ length: 10 }, () =>
      Bun.spawn(["bun", "-e", script], { env: { ...process.env, URL: db().url }, stdout: "pipe", stderr: "pipe" }),
    );
    const results = await Promise.all(
      children.map(async (child) => ({ code: await child.exited, out: await new Response(child.stdout).text(), err: await new Response(child.stderr).text() })),
    );
    for (const r of results) expect(r).toEqual({ code: 0, out: "opened\n", err: "" });

    const client = new pg.Client(db().url);
    await client.connect();
    try {
      const applied = await client.query<{ n: string; hashes: string }>(
        `SELECT count(*) AS n, count(DISTINCT hash) AS hashes FROM drizzle.__drizzle_migrations`,
      );
      expect(applied.rows[0]).toEqual({ n: String(migrationCount), hashes: String(migrationCount) });
      const clock = await client.query(`SELECT count(*)::int AS n FROM message_clock`);
      expect(clock.rows[0]).toEqual({ n: 1 });
    } finally {
      await client.end();
    }
  }, 60_000);

  test("opening a migrated database again applies nothing", async () => {
    const opened = await openPostgres(db().url, 1);
    const { rows } = await opened.query(`SELECT count(*)::int AS n FROM drizzle.__drizzle_migrations`);
    await opened.end();
    expect(rows[0]).toEqual({ n: migrationCount });
  });
});

describePostgres("a database that cannot be used", (db) => {
  async function openError(url: string): Promise<string> {
    try {
      const opened = await openPostgres(url, 1);
      await opened.end();
    } catch (err) {
      expect(err).toBeInstanceOf(DatabaseError);
      const message = (err as Error).message;
      expect(message).not.toContain("\n");
      expect(message).toContain("DATABASE_URL");
      return message;
    }
    throw new Error("expected the database not to open");
  }

  const withDatabase = (name: string, password?: string) => {
    const url = new URL(db().url);
    url.pathname = `/${name}`;
    if (password) url.password = password;
    return url.toString();
  };

  test("a database that does not exist, the password redacted", async () => {
    const message = await openError(withDatabase("textwire_no_such_database", "hunter2-secret"));
    expect(message).toContain("does not exist");
    expect(message).toContain(":***@");
    expect(message).not.toContain("hunter2");
  });

  test("a port where nothing listens", async () => {
    const url = new URL(db().url);
    url.port = "1";
    expect(await openError(url.toString())).toContain("connection refused");
  });

  test("a role that does not exist", async () => {
    const url = new URL(db().url);
    url.username = "textwire_no_such_role";
    expect(await openError(url.toString())).toMatch(/authentication failed|does not exist/);
  });

  test("a role that may not create tables: the server's own reason and the privileges migrations need", async () => {
    const role = `textwire_limited_${process.pid}`;
    const admin = new pg.Client({ connectionString: db().url });
    await admin.connect();
    try {
      await admin.query(`CREATE ROLE "${role}" LOGIN`);
      await admin.query("REVOKE CREATE ON SCHEMA public FROM PUBLIC");
      const url = new URL(db().url);
      url.username = role;
      const message = await openError(url.toString());
      expect(message).toContain("permission denied");
      expect(message).toContain("CREATE on the database and on schema public");
      expect(message).not.toContain("Failed query");
    } finally {
      await admin.query(`DROP OWNED BY "${role}"`).catch(() => {});
      await admin.query(`DROP ROLE IF EXISTS "${role}"`);
      await admin.end();
    }
  });
});
