// A SQLite database that cannot be opened or written at start stops the server with one
// line naming DATABASE_URL and the cause, exit code non-zero, never a stack trace
// (docs/operations.md). Each cause is made real: tests run as root, so a read-only file is
// made immutable with chattr(1), and a read-only file system is /sys. Every cause is a
// file's: the PostgreSQL pass skips them (startup.postgres.test.ts has PostgreSQL's).
import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { openStorage } from "../../src/db";
import { lines, describeOnSqlite, runCli, spawnServer, sqliteDatabase, type TestDatabase } from "./harness";

// Each test starts real servers; the bound that matters is each wait inside it.
setDefaultTimeout(60_000);

const immutable: string[] = [];
afterAll(() => {
  for (const path of immutable) Bun.spawnSync(["chattr", "-i", path]);
});

async function startFailure(db: TestDatabase) {
  const child = await spawnServer({ db });
  const code = await child.exited();
  return { code, stderr: child.stderr, stdout: child.stdout };
}

function expectOneLine(result: { code: number; stderr: string; stdout: string }, cause: RegExp) {
  expect(result.code).not.toBe(0);
  const errLines = lines(result.stderr);
  expect(errLines).toHaveLength(1);
  expect(errLines[0]).toContain("DATABASE_URL");
  expect(errLines[0]).toMatch(cause);
  expect(result.stderr + result.stdout).not.toMatch(/^\s+at /m);
  expect(result.stdout).not.toContain("listening on");
}

describeOnSqlite("a SQLite database that cannot be used at start", () => {
  test("the path is a directory", async () => {
    const db = sqliteDatabase();
    mkdirSync(db.url);
    expectOneLine(await startFailure(db), /is a directory/);
  });

  test("the file is not a SQLite database", async () => {
    const db = sqliteDatabase();
    writeFileSync(db.url, "name,phone\nAda,+14155550123\n".repeat(200));
    expectOneLine(await startFailure(db), /not a SQLite database/);
  });

  test("a part of the path is a file", async () => {
    const db = sqliteDatabase();
    writeFileSync(db.url, "");
    expectOneLine(await startFailure(sqliteDatabase(join(db.url, "textwire.db"))), /part of the path is a file/);
  });

  test("the file system is read-only (/sys)", async () => {
    expectOneLine(await startFailure(sqliteDatabase(`/sys/textwire-${process.pid}.db`)), /cannot be opened or created|read-only/);
  });

  test("the CLI says the same in one line", async () => {
    const db = sqliteDatabase();
    mkdirSync(db.url);
    const result = await runCli(["keys", "list"], { DATABASE_URL: db.url });
    expectOneLine(result, /is a directory/);
  });

  test("the file is read-only (immutable)", async () => {
    const db = sqliteDatabase();
    await (await openStorage(db.url)).close();
    const made = Bun.spawnSync(["chattr", "+i", db.url]);
    expect(made.exitCode).toBe(0);
    immutable.push(db.url);
    expectOneLine(await startFailure(db), /read-only/);
  });
});
