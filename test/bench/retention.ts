/**
 * Retention under load (docs/performance.md, Retention): `bun test/bench/retention.ts`.
 *
 * Seeds ROWS events and ROWS generations past retention (and MESSAGES messages of one contact,
 * kept), starts `bun run start` on that database, and while its first maintenance round purges
 * them, asks `/health` and that contact's history every PROBE_MS, one request of each at a time.
 * Prints the max and p99 latency of each and how long the purge took. Bounded: the probes stop
 * when the server logs the round's end, or after LIMIT_MS.
 *
 * Knobs: RETENTION_ROWS (500000), RETENTION_DATABASES (sqlite,postgres), BENCH_DATABASE_URL
 * (else TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres), RETENTION_SERVER_ROOT
 * (the checkout whose server runs, to compare with another version; default this one).
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { openStorage } from "../../src/db";
import { createTestDatabase } from "../support/postgres";

const ROOT = resolve(process.env.RETENTION_SERVER_ROOT ?? resolve(import.meta.dir, "..", ".."));
const ROWS = Number(process.env.RETENTION_ROWS ?? 500_000);
const MESSAGES = 200;
const PROBE_MS = 20;
const LIMIT_MS = 180_000;
const DATABASES = (process.env.RETENTION_DATABASES ?? "sqlite,postgres").split(",");
const ADMIN_URL = process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const KEY = "tw_bench_retention_key_0123456789";
const PHONE = "+14155550123";
const DAY_MS = 86_400_000;

/** Rows older than the 30 days' default: events (µs) and generations (ms), ids made from their number. */
const seedSql = (series: string) => [
  `INSERT INTO events (id, type, timestamp) SELECT 'evt_old_' || i, 'message.received', (${Date.now() - 40 * DAY_MS} * 1000) + i FROM ${series}`,
  `INSERT INTO generations (id, phone, body, model, created_at) SELECT 'gen_old_' || i, '${PHONE}', 'an old reply', 'm', ${Date.now() - 40 * DAY_MS} + i FROM ${series}`,
];

async function seed(url: string) {
  // Opened once through Textwire's own opener: migrated like a real database.
  const storage = await openStorage(url);
  for (let i = 0; i < MESSAGES; i++) await storage.messages.insert({ id: `msg_${i}`, phone: PHONE, body: `hello ${i}`, direction: "inbound", status: "received", network: "loopback", networkId: null });
  await storage.close();
  if (url.startsWith("postgres")) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const s of seedSql(`generate_series(1, ${ROWS}) AS g(i)`)) await client.query(s);
    await client.query("VACUUM ANALYZE");
    await client.end();
  } else {
    const db = new Database(url);
    const series = `(WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${ROWS}) SELECT i FROM n)`;
    for (const s of seedSql(series)) db.run(s);
    db.run("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
  }
}

const percentile = (xs: number[], p: number) => {
  const sorted = xs.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
};

interface Result {
  database: string;
  rows: number;
  purgeSeconds: number;
  purged: string;
  health: { probes: number; max: number; p99: number };
  history: { probes: number; max: number; p99: number };
}

/** Times one request a time to `path` until `done()`; each latency in ms. */
async function probe(url: string, path: string, done: () => boolean, slowest: [number, number, string][]): Promise<number[]> {
  const times: number[] = [];
  const begun = performance.now();
  while (!done()) {
    const t = performance.now();
    const res = await fetch(url + path, { headers: { authorization: `Bearer ${KEY}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    times.push(performance.now() - t);
    slowest.push([performance.now() - t, Math.round(t - begun), path.slice(0, 12)]);
    await Bun.sleep(PROBE_MS);
  }
  return times;
}

async function run(database: string): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), "tw-retention-bench-"));
  const pgDb = database === "postgres" ? await createTestDatabase(ADMIN_URL) : undefined;
  const url = pgDb?.url ?? join(dir, "textwire.db");
  try {
    const seeded = performance.now();
    await seed(url);
    console.error(`${database}: seeded ${ROWS} events and ${ROWS} generations in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);
    const server = Bun.spawn(["bun", "src/main.ts"], {
      cwd: ROOT,
      env: { ...process.env, PORT: "0", DATABASE_URL: url, API_KEYS: KEY, WORKFLOWS_DIR: "off", RATE_LIMIT_PER_MINUTE: "0", LOG_LEVEL: "info", MEDIA_STORE: join(dir, "media") },
      stdout: "pipe",
      stderr: "inherit",
    });
    let out = "";
    let roundEnded = false;
    let listening: (u: string) => void = () => {};
    const base = new Promise<string>((r) => (listening = r));
    let started = 0;
    let purged = "";
    void (async () => {
      for await (const chunk of server.stdout) {
        out += new TextDecoder().decode(chunk);
        const m = /listening on (http:\/\/[0-9.]+:\d+)/.exec(out);
        if (m && !started) {
          started = performance.now();
          listening(m[1]!);
        }
        // This version's round summary, or an older one's line about events.
      const line = out.split("\n").find((l) => l.includes("deleted rows past retention") || l.includes("deleted old webhook deliveries and events"));
        if (line && !roundEnded) {
          roundEnded = true;
          purged = line;
        }
      }
    })();
    const u = await Promise.race([base, Bun.sleep(60_000).then(() => Promise.reject(new Error("server did not listen")))]);
    const deadline = Date.now() + LIMIT_MS;
    const done = () => roundEnded || Date.now() > deadline;
    // The first request of each kind connects and prepares: timed apart, it is not the purge's doing.
    const firstMs: number[] = [];
    for (const path of ["/health", `/api/messages/${encodeURIComponent(PHONE)}?limit=20`]) {
      const t = performance.now();
      await (await fetch(u + path, { headers: { authorization: `Bearer ${KEY}` } })).arrayBuffer();
      firstMs.push(Math.round(performance.now() - t));
    }
    console.error(`${database}: first /health and history after start: ${firstMs.join(" and ")} ms`);
    const slowest: [number, number, string][] = [];
    const [health, history] = await Promise.all([probe(u, "/health", done, slowest), probe(u, `/api/messages/${encodeURIComponent(PHONE)}?limit=20`, done, slowest)]);
    // Where the slowest answers fell: [ms, ms after the server listened, path].
    console.error(`${database}: slowest`, JSON.stringify(slowest.sort((a, b) => b[0] - a[0]).slice(0, 6).map(([ms, at, p]) => [Math.round(ms), at, p])));
    const purgeSeconds = (performance.now() - started) / 1000;
    server.kill("SIGTERM");
    await server.exited;
    if (!roundEnded) throw new Error(`the purge did not end within ${LIMIT_MS} ms`);
    const stat = (xs: number[]) => ({ probes: xs.length, max: Math.round(Math.max(0, ...xs) * 10) / 10, p99: Math.round(percentile(xs, 99) * 10) / 10 });
    return { database, rows: ROWS, purgeSeconds: Math.round(purgeSeconds * 10) / 10, purged: purged.slice(0, 300), health: stat(health), history: stat(history) };
  } finally {
    await pgDb?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Result[] = [];
for (const database of DATABASES) results.push(await run(database));
console.log("| database | rows past retention (events + generations) | purge took | /health p99 / max | history p99 / max | probes |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const r of results) {
  console.log(`| ${r.database} | ${r.rows} + ${r.rows} | ${r.purgeSeconds} s | ${r.health.p99} / ${r.health.max} ms | ${r.history.p99} / ${r.history.max} ms | ${r.health.probes} + ${r.history.probes} |`);
}
for (const r of results) console.error(r.purged);
