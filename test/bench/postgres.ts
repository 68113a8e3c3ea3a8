// PostgreSQL for `bun run bench` (test/bench/run.ts): which server to use, a fresh database a
// part of the run, seeding, and what the database's processes do while a run measures.
import pg from "pg";

const DEFAULT_ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres";

export type Dialect = "sqlite" | "postgres";

/**
 * The databases to measure Textwire on and, when PostgreSQL is one, its admin URL.
 * BENCH_DATABASES names them; unset, PostgreSQL is measured when its admin URL
 * (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else the local default) answers. A
 * PostgreSQL asked for (in BENCH_DATABASES or by either URL) that does not answer fails.
 */
export async function benchDatabases(log: (msg: string) => void): Promise<{ dialects: Dialect[]; adminUrl?: string }> {
  const given = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || undefined;
  const adminUrl = given ?? DEFAULT_ADMIN_URL;
  const listed = process.env.BENCH_DATABASES?.split(",").map((s) => s.trim()).filter(Boolean);
  for (const d of listed ?? []) if (d !== "sqlite" && d !== "postgres") throw new Error(`BENCH_DATABASES: unknown database "${d}" (sqlite, postgres)`);
  const dialects = (listed ?? ["sqlite", "postgres"]) as Dialect[];
  if (!dialects.includes("postgres")) return { dialects };
  const problem = await unanswered(adminUrl);
  if (!problem) return { dialects, adminUrl };
  if (listed || given) throw new Error(`PostgreSQL at ${redacted(adminUrl)} does not answer: ${problem}`);
  log(`PostgreSQL not measured: nothing answers at ${redacted(adminUrl)} (${problem}); set BENCH_DATABASE_URL to an admin URL`);
  return { dialects: ["sqlite"] };
}

const redacted = (url: string) => url.replace(/^(postgres(?:ql)?:\/\/[^:/@]*:)[^@]*@/i, "$1***@");

async function unanswered(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
    return null;
  } catch (err) {
    return String((err as Error).message ?? err).split("\n")[0]!;
  } finally {
    await client.end().catch(() => {});
  }
}

export interface SeedRow {
  id: string;
  phone: string;
  body: string;
  direction: "inbound" | "outbound";
  status: string;
  ts: number;
  network_id: string;
}

/**
 * Writes rows straight into a migrated database, 5,000 a statement (the contacts trigger
 * counts them); `rowsAfter` gets the newest stored timestamp.
 */
export async function seedPostgres(url: string, rowsAfter: (lastTimestamp: number) => Iterable<SeedRow>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows: last } = await client.query<{ ts: string }>("SELECT coalesce(max(timestamp), 0) AS ts FROM messages");
    let batch: SeedRow[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      const column = <K extends keyof SeedRow>(k: K) => batch.map((r) => r[k]);
      await client.query(
        `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at)
         SELECT id, phone, body, direction, status, ts, 'loopback', network_id, NULL, ts
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[])
           AS r(id, phone, body, direction, status, ts, network_id)`,
        [column("id"), column("phone"), column("body"), column("direction"), column("status"), column("ts"), column("network_id")],
      );
      batch = [];
    };
    for (const row of rowsAfter(Number(last[0]!.ts))) {
      batch.push(row);
      if (batch.length === 5_000) await flush();
    }
    await flush();
    await client.query("ANALYZE messages");
  } finally {
    await client.end();
  }
}

/** How a database's client connections spent a run: mean number busy, waiting for a row lock, flushing WAL. */
export interface Waits {
  active: number;
  lock: number;
  wal: number;
}

/** Watches the database server's processes through one admin connection. */
export class PostgresWatch {
  private constructor(private readonly admin: pg.Client) {}

  static async open(adminUrl: string): Promise<PostgresWatch> {
    const admin = new pg.Client({ connectionString: adminUrl, application_name: "textwire-bench" });
    await admin.connect();
    return new PostgresWatch(admin);
  }

  /**
   * The processes whose CPU is the database's: the backends (and autovacuum workers) of
   * `database`, and the server's shared writers (WAL writer, background writer, checkpointer).
   */
  async processes(database: string): Promise<number[]> {
    const { rows } = await this.admin.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = $1 OR backend_type IN ('walwriter', 'background writer', 'checkpointer')`,
      [database],
    );
    return rows.map((r) => r.pid);
  }

  /**
   * Samples every `everyMs` until stopped what `database`'s client connections are doing:
   * a row lock wait (Lock) or a WAL write or flush (a commit) among the busy ones.
   */
  sampleWaits(database: string, everyMs = 20): () => Promise<Waits> {
    const sum = { active: 0, lock: 0, wal: 0, n: 0 };
    let stopped = false;
    const sampling = (async () => {
      while (!stopped) {
        const { rows } = await this.admin.query<{ active: number; lock: number; wal: number }>(
          `SELECT count(*) FILTER (WHERE state = 'active')::int AS active,
                  count(*) FILTER (WHERE wait_event_type = 'Lock')::int AS lock,
                  count(*) FILTER (WHERE wait_event IN ('WALWrite', 'WALSync'))::int AS wal
           FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'`,
          [database],
        );
        sum.active += rows[0]!.active;
        sum.lock += rows[0]!.lock;
        sum.wal += rows[0]!.wal;
        sum.n++;
        await Bun.sleep(everyMs);
      }
    })();
    return async () => {
      stopped = true;
      await sampling;
      const n = Math.max(1, sum.n);
      return { active: sum.active / n, lock: sum.lock / n, wal: sum.wal / n };
    };
  }

  async version(): Promise<string> {
    const { rows } = await this.admin.query<{ server_version: string }>("SHOW server_version");
    return rows[0]!.server_version.split(" ")[0]!;
  }

  close = () => this.admin.end();
}
