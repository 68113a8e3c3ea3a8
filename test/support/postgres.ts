import { afterAll, beforeAll, describe } from "bun:test";
import pg from "pg";

/**
 * PostgreSQL for tests. TEST_DATABASE_URL is an admin URL (a role that may create
 * databases); each suite gets a database of its own, created fresh and dropped afterwards.
 * Unset, the suites are skipped with one line saying how to run them; set, a server that
 * does not answer fails them.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined;

const SKIPPED = "PostgreSQL tests skipped: set TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres to run them";
let toldSkipped = false;

/** Every database this process creates is named so; what a killed run leaves is found by it. */
export const DATABASE_NAME_PREFIX = `textwire_test_${process.pid}_`;

export interface TestDatabase {
  /** The fresh database's URL. */
  url: string;
  name: string;
  /** Drops it, closing whatever connections are still open on it. */
  drop(): Promise<void>;
}

async function asAdmin<T>(adminUrl: string, run: (admin: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    return await run(admin);
  } finally {
    await admin.end();
  }
}

/** Creates an empty database with a name no other run uses (`adminUrl`: the benchmark passes its own). */
export async function createTestDatabase(adminUrl = TEST_DATABASE_URL): Promise<TestDatabase> {
  if (!adminUrl) throw new Error(SKIPPED);
  const name = `${DATABASE_NAME_PREFIX}${crypto.randomUUID().slice(0, 8)}`;
  await asAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => asAdmin(adminUrl, (admin) => admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => {}),
  };
}

/** Whether PostgreSQL suites run; when they do not, says so once per test run. */
export function postgresEnabled(): boolean {
  if (!TEST_DATABASE_URL && !toldSkipped) {
    toldSkipped = true;
    console.warn(SKIPPED);
  }
  return TEST_DATABASE_URL !== undefined;
}

/**
 * A `describe` whose tests share one fresh database (`db().url`), created before them and
 * dropped after; skipped when TEST_DATABASE_URL is unset.
 */
export function describePostgres(label: string, body: (db: () => TestDatabase) => void): void {
  if (!postgresEnabled()) {
    describe.skip(label, () => body(() => { throw new Error(SKIPPED); }));
    return;
  }
  describe(label, () => {
    let database: TestDatabase | undefined;
    beforeAll(async () => {
      database = await createTestDatabase();
    }, 60_000);
    afterAll(async () => {
      await database?.drop();
    }, 60_000);
    body(() => {
      if (!database) throw new Error("the test database is not created yet (use it inside a test or hook)");
      return database;
    });
  });
}
