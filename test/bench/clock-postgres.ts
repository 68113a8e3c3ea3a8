// What the one message clock costs on PostgreSQL: inserts per second with 1, 2 and 3 writer
// processes (each a pool of 10 connections kept busy by 20 concurrent inserts), for each way
// of giving timestamps in commit order, against a baseline that gives no such order.
//
//   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun test/bench/clock-postgres.ts [seconds]
import pg from "pg";
import { openPostgres } from "../../src/db/postgres/open";
import { createTestDatabase } from "../support/postgres";

const NOW_US = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`;
const COLUMNS = `(id, phone, body, direction, status, timestamp, network, updated_at)`;
const row = (ts: string) => `SELECT gen_random_uuid()::text, $1, 'hello', 'outbound', 'queued', ${ts}, 'loopback', ${ts}`;

let tail: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(fn: () => Promise<T>): Promise<T> {
  const run = tail.then(fn, fn);
  tail = run.catch(() => {});
  return run;
}

/**
 * Inserts that arrive while a batch is being written wait and go together in the next one:
 * one clock move of n steps and one multi-row insert, one commit for all of them.
 */
let waiting: { phone: string; done: (err?: unknown) => void }[] = [];
let writing = false;
let batchClient: Promise<pg.Client> | undefined;
async function writeBatches(): Promise<void> {
  writing = true;
  while (waiting.length > 0) {
    const batch = waiting.splice(0, 500);
    try {
      await (await batchClient!).query({
        name: "batch",
        text: `WITH input AS (SELECT * FROM unnest($1::text[]) WITH ORDINALITY AS i(phone, n)),
               c AS (UPDATE message_clock SET t = greatest(t + $2, ${NOW_US} + $2 - 1) RETURNING t)
               INSERT INTO messages ${COLUMNS}
               SELECT gen_random_uuid()::text, input.phone, 'hello', 'outbound', 'queued', c.t - $2 + input.n, 'loopback', c.t - $2 + input.n FROM input, c`,
        values: [batch.map((b) => b.phone), batch.length],
      });
      for (const b of batch) b.done();
    } catch (err) {
      for (const b of batch) b.done(err);
    }
  }
  writing = false;
}
function batched(phone: string): Promise<void> {
  return new Promise((resolve, reject) => {
    waiting.push({ phone, done: (err) => (err ? reject(err) : resolve()) });
    if (!writing) void writeBatches();
  });
}

/** Each design: the statements of one insert, run on one pooled connection. */
const DESIGNS: Record<string, (client: pg.PoolClient, phone: string) => Promise<unknown>> = {
  // No order across writers: timestamps from the clock alone (the cost floor).
  "none (clock_timestamp only)": (c, phone) =>
    c.query({ name: "none", text: `INSERT INTO messages ${COLUMNS} ${row(NOW_US)} ON CONFLICT DO NOTHING`, values: [phone] }),
  // The clock row and the insert in one autocommit statement: the row lock lives for one round trip and the commit.
  "clock table, one statement": (c, phone) =>
    c.query({
      name: "clock1",
      text: `WITH c AS (UPDATE message_clock SET t = greatest(t + 1, ${NOW_US}) RETURNING t)
             INSERT INTO messages ${COLUMNS} SELECT gen_random_uuid()::text, $1, 'hello', 'outbound', 'queued', c.t, 'loopback', c.t FROM c`,
      values: [phone],
    }),
  // The same, with one connection per process waiting for the row (the others queue in the process).
  "clock table, one statement, one waiter a process": (c, phone) => oneAtATime(() => DESIGNS["clock table, one statement"]!(c, phone)),
  // Inserts waiting in the process go together: one statement and one commit for a batch.
  "clock table, batched in the process": async (_, phone) => {
    batchClient ??= (async () => {
      const client = new pg.Client(process.argv[3]);
      await client.connect();
      return client;
    })();
    await batched(phone);
  },
  // As a send does it inside a unit of work: BEGIN, clock, insert, COMMIT (the lock held across three round trips).
  "clock table, transaction": async (c, phone) => {
    await c.query("BEGIN");
    const { rows } = await c.query<{ t: string }>({ name: "tick", text: `UPDATE message_clock SET t = greatest(t + 1, ${NOW_US}) RETURNING t` });
    await c.query({ name: "insert", text: `INSERT INTO messages ${COLUMNS} SELECT gen_random_uuid()::text, $1, 'hello', 'outbound', 'queued', $2, 'loopback', $2`, values: [phone, rows[0]!.t] });
    await c.query("COMMIT");
  },
  // An advisory transaction lock and max(timestamp) + 1 (the index's last entry).
  "advisory lock + max()": async (c, phone) => {
    await c.query("BEGIN");
    await c.query("SELECT pg_advisory_xact_lock(42)");
    await c.query({
      name: "advisory",
      text: `INSERT INTO messages ${COLUMNS} ${row(`(SELECT greatest(coalesce(max(timestamp), 0) + 1, ${NOW_US}) FROM messages)`)}`,
      values: [phone],
    });
    await c.query("COMMIT");
  },
};

async function writer(url: string, design: string, ms: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  const insert = DESIGNS[design]!;
  const end = Date.now() + ms;
  let count = 0;
  await Promise.all(
    Array.from({ length: 20 }, async (_, i) => {
      while (Date.now() < end) {
        const client = await pool.connect();
        try {
          await insert(client, `+1415555${String(i).padStart(4, "0")}`);
        } finally {
          client.release();
        }
        count++;
      }
    }),
  );
  await pool.end();
  await (await batchClient)?.end();
  console.log(count);
}

if (process.argv[2] === "--writer") {
  await writer(process.argv[3]!, process.argv[4]!, Number(process.argv[5]));
} else {
  const seconds = Number(process.argv[2] ?? 5);
  const database = await createTestDatabase();
  try {
    const pool = await openPostgres(database.url, 1);
    console.log(`| design | 1 writer | 2 writers | 3 writers |\n| --- | --- | --- | --- |`);
    for (const design of Object.keys(DESIGNS)) {
      const rates: number[] = [];
      for (const writers of [1, 2, 3]) {
        await pool.query("TRUNCATE messages, contacts");
        const children = Array.from({ length: writers }, () =>
          Bun.spawn(["bun", import.meta.path, "--writer", database.url, design, String(seconds * 1000)], { stdout: "pipe" }),
        );
        const counts = await Promise.all(children.map(async (c) => Number(await new Response(c.stdout).text())));
        rates.push(Math.round(counts.reduce((a, b) => a + b, 0) / seconds));
      }
      console.log(`| ${design} | ${rates.map((r) => `${r}/s`).join(" | ")} |`);
    }
    await pool.end();
  } finally {
    await database.drop();
  }
}
