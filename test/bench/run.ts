/**
 * `bun run bench`: Textwire on SQLite and on PostgreSQL against the floor (test/bench/floor.ts,
 * the same routes and rules on raw Bun.serve and bun:sqlite), the message clock's cost with
 * 1, 2 and 3 API processes on one database, then growth to 1 million stored messages.
 *
 *   bun run bench                                   full run (about 9 minutes)
 *   BENCH_SECONDS=1 BENCH_GROWTH=0 bun run bench    quick smoke run (about 2 minutes)
 *
 * Environment:
 *   BENCH_DATABASES     databases Textwire is measured on, e.g. "sqlite" or "sqlite,postgres"
 *                       (default: both when PostgreSQL answers at the admin URL, else sqlite)
 *   BENCH_DATABASE_URL  PostgreSQL admin URL (a role that may create databases; default
 *                       TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres);
 *                       each part of the run creates a fresh database there and drops it after
 *   BENCH_SECONDS       measured seconds per run (default 5)
 *   BENCH_WARMUP        warm-up seconds per server and route (default 1)
 *   BENCH_CONNECTIONS   connections (default 32)
 *   BENCH_RATE          requests per second of the paced runs (default 500)
 *   BENCH_CLOCK=0       skips the clock part
 *   BENCH_GROWTH=0      skips the growth part (SQLite only)
 *   BENCH_GROWTH_SIZES  stored messages (default "10000,1000000")
 *   BENCH_ROUTES        e.g. "send,poll": only routes whose name contains one of these
 *   BENCH_LOG_LEVEL     Textwire's LOG_LEVEL in the measured runs (default warn; info is its
 *                       own default, one log line per request)
 *   BENCH_QUIET_BUDGET  seconds the run may spend waiting for other processes on the machine
 *                       to go quiet and repeating disturbed runs (default 150)
 *   BENCH_OUT           the report (default bench/results.md; a smoke run overwrites it too)
 *   BENCH_KEEP=1        keeps the temporary databases
 * Textwire's own variables pass through (e.g. DATABASE_POOL_SIZE=4 bun run bench).
 *
 * How it measures:
 * - Textwire is started with the README's command (`bun run start`, in the project root)
 *   with PORT=0, HOST=127.0.0.1, its own temporary DATABASE_URL (a SQLite file, or a
 *   PostgreSQL database created for the run), API_KEYS=<a bench key>,
 *   RATE_LIMIT_PER_MINUTE=0 (no 429s), WORKFLOWS_DIR=off and LOG_LEVEL=warn: at `info`
 *   Textwire writes one JSON log line per request, and this benchmark measures the API,
 *   not a log pipe (BENCH_LOG_LEVEL=info measures that line's cost). The port Textwire chose
 *   comes from its `listening on` line, or, when a build does not write that line at `warn`,
 *   from /proc (its listening socket); readiness is then confirmed with GET /health.
 * - The floor is started the same way on its own temporary SQLite file.
 * - The load generator is autocannon (npm) on Node, a separate process (test/bench/load.mjs),
 *   with 32 keep-alive connections. Per route: a warm-up of each server, then measured
 *   runs with the servers in turn (Textwire on SQLite, Textwire on PostgreSQL, floor), twice.
 *   Latencies are every response's, at microsecond resolution; errors are non-2xx answers
 *   plus socket errors and timeouts.
 * - Then, per route and server, one paced run: BENCH_RATE (default 500) requests per second on
 *   an even schedule over the same 32 connections (open loop; see load.mjs), below the
 *   servers' saturation, so its p99 is latency rather than queueing behind 32 requests.
 * - Every database is seeded with 400 messages (4 contacts, about half inbound) before the
 *   runs, so history and poll return full pages (50 and 100 messages).
 * - CPU: the machine has 2 cores; the load generator takes most of one. For every run the
 *   CPU used by the server, by PostgreSQL (the backends of the run's database and the server's
 *   WAL writer, background writer and checkpointer, found in pg_stat_activity and read from
 *   /proc), by the load generator and by anything else on the machine ("foreign") is
 *   recorded, so a disturbed run can be seen.
 * - The clock: on each database, 1, then 2, then 3 `bun run start api` processes share one
 *   database; one load generator spreads its connections over them (autocannon takes several
 *   URLs) and sends POST /api/send, without and with a fresh Idempotency-Key. On PostgreSQL,
 *   pg_stat_activity is sampled every 20 ms during each run: how many of the database's
 *   connections are busy, waiting for a row lock (the clock row) or writing WAL.
 *   test/bench/clock-postgres.ts measures the clock alone (inserts, no HTTP) for other designs.
 * - Growth (SQLite): a database with N messages (10,000 contacts, half inbound, timestamps
 *   strictly increasing, plus 5 contacts with exactly 200 messages each whose history is measured,
 *   so the page is the same 50 messages at every size) is written directly with bun:sqlite
 *   into a file whose schema Textwire created; then Textwire is started on it (start-up
 *   time: spawn to its `listening on` line, at LOG_LEVEL=info, median of 3) and history and
 *   poll (`since` in the middle, 100 messages a page) are measured; the floor is measured
 *   on the same file for comparison.
 */
import { Database } from "bun:sqlite";
import type { Subprocess } from "bun";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { isoTime, microClock } from "../../src/messages/time";
import { createTestDatabase } from "../support/postgres";
import { benchDatabases, PostgresWatch, seedPostgres, type Dialect, type SeedRow, type Waits } from "./postgres";

const ROOT = resolve(import.meta.dir, "../..");

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number (got ${raw})`);
  return n;
}

const SECONDS = envNumber("BENCH_SECONDS", 5);
const WARMUP = envNumber("BENCH_WARMUP", SECONDS < 2 ? 0.5 : 1);
const CONNECTIONS = Math.round(envNumber("BENCH_CONNECTIONS", 32));
/** Offered load of the paced runs (requests per second, evenly spaced), below both servers' saturation. */
const RATE = Math.round(envNumber("BENCH_RATE", 500));
const GROWTH = process.env.BENCH_GROWTH !== "0";
const CLOCK = process.env.BENCH_CLOCK !== "0";
const GROWTH_SIZES = (process.env.BENCH_GROWTH_SIZES ?? "10000,1000000").split(",").map((s) => Number(s.trim()));
const OUT = resolve(ROOT, process.env.BENCH_OUT ?? "bench/results.md");
const KEEP = process.env.BENCH_KEEP === "1";
/** Textwire's LOG_LEVEL in the measured runs (warn: no line per request). */
const TW_LOG_LEVEL = (process.env.BENCH_LOG_LEVEL ?? "warn") as "warn" | "info";
/** Seconds the whole run may spend waiting for a quiet machine and repeating disturbed runs. */
let quietBudget = envNumber("BENCH_QUIET_BUDGET", SECONDS < 2 ? 10 : 150);
/** Other processes' CPU (cores) above which a run counts as disturbed and is repeated. */
const DISTURBED = 0.25;
const KEY = `bench_${randomBytes(24).toString("base64url")}`;
const AUTH = { authorization: `Bearer ${KEY}` };
const JSON_AUTH = { ...AUTH, "content-type": "application/json" };
const TICKS = 100; // USER_HZ on Linux

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tmp = mkdtempSync(join(tmpdir(), "textwire-bench-"));

// ---- /proc ----------------------------------------------------------------------------

/** Fields of /proc/<pid>/stat after the command name (index 0 = state, 1 = ppid, 11 = utime, 12 = stime). */
function statFields(pid: number): string[] | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    return text.slice(text.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

function cpuTicks(pid: number): number {
  const f = statFields(pid);
  return f ? Number(f[11]) + Number(f[12]) : 0;
}

/** Busy ticks of the whole machine (all cores). */
function machineBusyTicks(): number {
  const [, ...v] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const n = v.map(Number);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return total - n[3]! - n[4]!;
}

/**
 * Waits (within the budget) until the machine is quiet: everything but our own processes
 * uses less than 0.15 of a core over 0.5 s. Other sessions' builds and test suites share
 * this machine; a benchmark run beside them measures them.
 */
async function waitQuiet(): Promise<void> {
  const ours = () => [process.pid, ...[...running].map((s) => s.pid)].reduce((n, pid) => n + cpuTicks(pid), 0);
  let waited = 0;
  while (quietBudget > 0) {
    const b0 = machineBusyTicks();
    const o0 = ours();
    await sleep(500);
    const foreign = (machineBusyTicks() - b0 - (ours() - o0)) / TICKS / 0.5;
    if (foreign < 0.15) break;
    waited += 0.5;
    quietBudget -= 0.5;
  }
  if (waited > 0) log(`waited ${waited} s for other processes to go quiet${quietBudget <= 0 ? " (budget used up; measuring anyway)" : ""}`);
}

function childOf(ppid: number): number | null {
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    if (statFields(Number(name))?.[1] === String(ppid)) return Number(name);
  }
  return null;
}

/** The TCP port `pid` listens on, from its socket inodes and /proc/<pid>/net/tcp. */
function listeningPort(pid: number): number | null {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]!);
      } catch {}
    }
    for (const table of ["tcp", "tcp6"]) {
      for (const line of readFileSync(`/proc/${pid}/net/${table}`, "utf8").split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        if (f[3] === "0A" && inodes.has(f[9]!)) return parseInt(f[1]!.split(":")[1]!, 16);
      }
    }
  } catch {}
  return null;
}

function procStatusKb(pid: number, field: "VmHWM" | "VmRSS"): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

// ---- servers --------------------------------------------------------------------------

type Kind = "textwire" | "floor";

const DIALECT_NAMES: Record<Dialect, string> = { sqlite: "SQLite", postgres: "PostgreSQL" };

/** A database for one part of the run: a SQLite file, or a PostgreSQL database created for it. */
interface BenchDatabase {
  dialect: Dialect;
  url: string;
  /** PostgreSQL: the database's name (its backends' CPU is the database's). */
  name?: string;
  drop(): Promise<void>;
}

/** PostgreSQL's admin URL when it is measured (main() sets it), and the watch on its processes. */
let postgresAdminUrl: string | undefined;
let watch: PostgresWatch | undefined;
const undropped = new Set<BenchDatabase>();

async function newDatabase(dialect: Dialect, label: string): Promise<BenchDatabase> {
  if (dialect === "sqlite") {
    const path = join(tmp, `${label}.db`);
    return {
      dialect,
      url: path,
      drop: async () => {
        if (!KEEP) for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
      },
    };
  }
  const created = await createTestDatabase(postgresAdminUrl);
  const db: BenchDatabase = {
    dialect,
    url: created.url,
    name: created.name,
    drop: async () => {
      undropped.delete(db);
      if (KEEP) log(`kept the PostgreSQL database ${created.name}`);
      else await created.drop();
    },
  };
  undropped.add(db);
  return db;
}

interface Server {
  kind: Kind;
  database: BenchDatabase;
  proc: Subprocess<"ignore", "pipe", "pipe">;
  /** The process that serves (for Textwire, the child of `bun run start`). */
  pid: number;
  url: string;
  /** Spawn to the `listening on` line (or, without one, to the listening socket). */
  startupMs: number;
  /** Highest VmRSS seen by the 200 ms sampler, kB. */
  maxRssKb: number;
  output: string[];
  /** VmHWM (peak resident set) of the serving process, kB. */
  peakRssKb(): number;
  stop(): Promise<void>;
}

const running = new Set<Server>();

async function pump(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) {
  const decoder = new TextDecoder();
  let rest = "";
  for await (const chunk of stream) {
    rest += decoder.decode(chunk, { stream: true });
    let i: number;
    while ((i = rest.indexOf("\n")) >= 0) {
      onLine(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  }
  if (rest) onLine(rest);
}

/** Starts Textwire (`bun run start`, or `bun run start api` with mode "api") or the floor on `database`. */
async function startServer(kind: Kind, database: BenchDatabase, logLevel: "warn" | "info" = "warn", mode?: "api"): Promise<Server> {
  const cmd = kind === "textwire" ? ["bun", "run", "start", ...(mode ? [mode] : [])] : ["bun", "test/bench/floor.ts"];
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    API_KEYS: KEY,
    RATE_LIMIT_PER_MINUTE: "0",
    WORKFLOWS_DIR: "off",
    LOG_LEVEL: logLevel,
  };
  const started = performance.now();
  const proc = Bun.spawn(cmd, { cwd: ROOT, env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const output: string[] = [];
  let listening: { url: string; at: number } | null = null;
  const onLine = (line: string) => {
    if (output.length < 200) output.push(line);
    const m = /listening on (http:\/\/[^\s"]+)/.exec(line);
    if (m && !listening) listening = { url: m[1]!, at: performance.now() };
  };
  void pump(proc.stdout, onLine);
  void pump(proc.stderr, onLine);

  let pid: number | null = kind === "floor" ? proc.pid : null;
  let url: string | null = null;
  let readyAt = 0;
  const deadline = started + 120_000;
  while (!url) {
    if (proc.exitCode !== null || performance.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`${kind} did not start (exit ${proc.exitCode}):\n${output.join("\n")}`);
    }
    pid ??= childOf(proc.pid);
    const seen = listening as { url: string; at: number } | null;
    if (seen) {
      url = seen.url;
      readyAt = seen.at;
    } else if (pid !== null) {
      const port = listeningPort(pid);
      if (port !== null) {
        url = `http://127.0.0.1:${port}`;
        readyAt = performance.now();
      }
    }
    if (!url) await sleep(5);
  }
  while (pid === null) {
    pid = childOf(proc.pid);
    if (pid === null) await sleep(5);
  }
  for (let i = 0; ; i++) {
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) break;
    if (i > 500) throw new Error(`${kind} never answered /health at ${url}`);
    await sleep(10);
  }
  const servingPid = pid;
  const server: Server = {
    kind,
    database,
    proc,
    pid: servingPid,
    url,
    startupMs: readyAt - started,
    maxRssKb: 0,
    output,
    peakRssKb: () => procStatusKb(servingPid, "VmHWM"),
    async stop() {
      clearInterval(sampler);
      running.delete(server);
      try {
        process.kill(servingPid, "SIGTERM");
      } catch {}
      const exited = await Promise.race([proc.exited.then(() => true), sleep(15_000).then(() => false)]);
      if (!exited) {
        log(`${kind} did not stop on SIGTERM; killing it`);
        try {
          process.kill(servingPid, "SIGKILL");
        } catch {}
        proc.kill("SIGKILL");
        await proc.exited;
      }
    },
  };
  const sampler = setInterval(() => {
    server.maxRssKb = Math.max(server.maxRssKb, procStatusKb(servingPid, "VmRSS"));
  }, 200);
  running.add(server);
  return server;
}

// ---- seeding --------------------------------------------------------------------------

const TEXTS = [
  "Your order #48213 has shipped and will arrive on Tuesday.",
  "Hi! Is the store open tomorrow?",
  "Thanks, got it.",
  "Reminder: your appointment is at 10:30 tomorrow. Reply C to cancel.",
  "Can I change the delivery address to 12 Baker Street?",
  "Your verification code is 482913. It expires in 10 minutes.",
  "yes please",
  "We received your payment of $42.00. Thank you!",
  "When will my refund arrive? I returned the shoes last week and still have not heard anything back.",
  "¿Abren mañana? Quería pasar a recoger mi pedido 😊",
];

/** mulberry32: repeatable seeding. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface SeedPlan {
  total: number;
  /** Background contacts chosen uniformly (0: every message goes to `heavy`). */
  contacts: number;
  /** Contacts that get exactly `perHeavy` messages each, spread evenly over time. */
  heavy: string[];
  perHeavy: number;
}

/**
 * The messages of `plan`, after the newest stored one (`last`): timestamps (µs) strictly
 * increasing, 1 s apart, ending a minute ago; about half inbound. `middle`: the timestamp
 * of the message in the middle.
 */
function seedRows(plan: SeedPlan, last: number): { middle: number; rows: Generator<SeedRow> } {
  const spacing = 1_000_000;
  const first = Math.max(last + 1, microClock() - 60_000_000 - plan.total * spacing);
  const heavySlots = plan.heavy.length * plan.perHeavy;
  const stride = plan.contacts === 0 ? 1 : Math.floor(plan.total / heavySlots);
  function* rows(): Generator<SeedRow> {
    const random = rng(plan.total);
    let heavyUsed = 0;
    for (let i = 0; i < plan.total; i++) {
      const ts = first + i * spacing;
      const id = Bun.randomUUIDv7("hex", Math.floor(ts / 1000));
      let phone: string;
      if (heavyUsed < heavySlots && i % stride === 0) phone = plan.heavy[heavyUsed++ % plan.heavy.length]!;
      else phone = `+1212${String(5_000_000 + Math.floor(random() * plan.contacts)).padStart(7, "0")}`;
      const inbound = random() < 0.5;
      yield {
        id,
        phone,
        body: TEXTS[Math.floor(random() * TEXTS.length)]!,
        direction: inbound ? "inbound" : "outbound",
        status: inbound ? "received" : "delivered",
        ts,
        network_id: inbound ? `seed-${i}` : `loopback:${id}`,
      };
    }
  }
  return { middle: first + Math.floor(plan.total / 2) * spacing, rows: rows() };
}

/** Writes `plan.total` messages straight into an already migrated SQLite file, in big transactions. */
function seedSqlite(path: string, plan: SeedPlan): { middle: number } {
  const db = new Database(path, { strict: true });
  db.run("PRAGMA journal_mode = WAL");
  db.run("PRAGMA synchronous = NORMAL");
  db.run("PRAGMA busy_timeout = 5000");
  const insert = db.query(
    `INSERT INTO messages (id, phone, body, direction, status, timestamp, network, network_id, error, updated_at)
     VALUES ($id, $phone, $body, $direction, $status, $ts, 'loopback', $network_id, NULL, $ts)`,
  );
  const last = (db.query("SELECT max(timestamp) AS ts FROM messages").get() as { ts: number | null }).ts ?? 0;
  const { middle, rows } = seedRows(plan, last);
  const batch = 100_000;
  let done = false;
  while (!done) {
    db.transaction(() => {
      for (let i = 0; i < batch; i++) {
        const next = rows.next();
        if (next.done) {
          done = true;
          return;
        }
        insert.run({ ...next.value });
      }
    }).immediate();
  }
  db.run("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  return { middle };
}

/** Seeds a database Textwire (or the floor) has migrated. */
async function seed(database: BenchDatabase, plan: SeedPlan): Promise<void> {
  if (database.dialect === "sqlite") seedSqlite(database.url, plan);
  else await seedPostgres(database.url, (last) => seedRows(plan, last).rows);
}

// ---- load -----------------------------------------------------------------------------

interface LoadRequest {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
}

interface Route {
  name: string;
  requests: LoadRequest[];
  idReplacement?: boolean;
  /** Checks one answer, so that no run measures errors. */
  check(status: number, body: any): string | null;
}

interface LoadResult {
  responses: number;
  seconds: number;
  rps: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  cpuMs: number;
}

interface Run extends LoadResult {
  kind: Kind;
  dialect: Dialect;
  /** Server processes the load was spread over, and connections in all. */
  processes: number;
  connections: number;
  /** CPU cores used during the run by the servers, the load generator and everything else. */
  serverCores: number;
  /** Server CPU time per response, microseconds: barely moved by other load on the machine. */
  cpuUsPerRequest: number;
  /** PostgreSQL: cores and CPU µs per response of the database's processes (SQLite works inside the server). */
  databaseCores: number;
  dbCpuUsPerRequest: number;
  loadCores: number;
  foreignCores: number;
  latencies: Float64Array;
  /** Runs made to get this one (disturbed ones repeated). */
  attempts: number;
  /** PostgreSQL, when asked for: what the database's connections did during the run. */
  waits?: Waits;
}

/** Connections for `servers` servers: BENCH_CONNECTIONS, rounded up to spread evenly over them. */
const connectionsFor = (servers: number) => Math.ceil(CONNECTIONS / servers) * servers;

async function load(urls: string[], route: Route, seconds: number, latenciesOut?: string, paced?: number): Promise<LoadResult> {
  const options = {
    paced,
    // Several URLs: autocannon gives them the connections in turn.
    url: urls.length === 1 ? urls[0] : urls,
    connections: connectionsFor(urls.length),
    seconds,
    requests: route.requests,
    idReplacement: route.idReplacement ?? false,
    latenciesOut,
  };
  const proc = Bun.spawn(["node", join(import.meta.dir, "load.mjs"), JSON.stringify(options)], {
    cwd: ROOT,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const result = out.trim().split("\n").pop();
  if (code !== 0 || !result) throw new Error(`load generator failed (exit ${code}): ${err || "no result"}`);
  return JSON.parse(result) as LoadResult;
}

interface MeasureOptions {
  /** Requests per second on an even schedule (else as fast as answered). */
  paced?: number;
  /** PostgreSQL: sample what the database's connections wait for. */
  waits?: boolean;
}

/**
 * A measured run of `route` against `servers` (one, or several on one database) after a
 * quiet gate; repeated (within the budget) when other processes disturbed it.
 */
async function measure(servers: Server[], route: Route, seconds: number, opts: MeasureOptions = {}): Promise<Run> {
  let best: Run | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    await waitQuiet();
    const run = await measureOnce(servers, route, seconds, opts);
    run.attempts = attempt + 1;
    if (!best || run.foreignCores < best.foreignCores) best = { ...run, attempts: attempt + 1 };
    if (run.foreignCores <= DISTURBED || quietBudget < seconds) break;
    log(`${route.name}: ${label(run)} run disturbed (other processes used ${f2(run.foreignCores)} cores); repeating`);
    quietBudget -= seconds;
  }
  return best!;
}

/** CPU ticks so far of the database's processes (none for SQLite: it works inside the server). */
async function databaseTicks(database: BenchDatabase): Promise<Map<number, number>> {
  const pids = database.name ? await watch!.processes(database.name) : [];
  return new Map(pids.map((pid) => [pid, cpuTicks(pid)]));
}

let runCounter = 0;
async function measureOnce(servers: Server[], route: Route, seconds: number, opts: MeasureOptions): Promise<Run> {
  const { database, kind } = servers[0]!;
  const file = join(tmp, `latencies-${runCounter++}.f64`);
  const db0 = await databaseTicks(database);
  const busy0 = machineBusyTicks();
  const own0 = cpuTicks(process.pid);
  const cpu0 = servers.map((s) => cpuTicks(s.pid));
  const stopWaits = opts.waits && database.name ? watch!.sampleWaits(database.name) : undefined;
  const t0 = performance.now();
  const result = await load(
    servers.map((s) => s.url),
    route,
    seconds,
    file,
    opts.paced,
  );
  const elapsed = (performance.now() - t0) / 1000;
  const waits = await stopWaits?.();
  for (const s of servers) {
    if (s.proc.exitCode !== null) throw new Error(`${label({ kind: s.kind, dialect: s.database.dialect })} exited (${s.proc.exitCode}) during a run:\n${s.output.join("\n")}`);
  }
  const serverTicks = servers.reduce((n, s, i) => n + cpuTicks(s.pid) - cpu0[i]!, 0);
  const machineTicks = machineBusyTicks() - busy0;
  const ownTicks = cpuTicks(process.pid) - own0;
  // A backend that started during the run counts whole.
  let dbTicks = 0;
  for (const [pid, ticks] of await databaseTicks(database)) dbTicks += Math.max(0, ticks - (db0.get(pid) ?? 0));
  const cores = (ticks: number) => ticks / TICKS / elapsed;
  const usPerResponse = (ticks: number) => ((ticks / TICKS) * 1e6) / Math.max(1, result.responses);
  const loadCores = result.cpuMs / 1000 / elapsed;
  const bytes = readFileSync(file);
  rmSync(file);
  const latencies = new Float64Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 8);
  return {
    ...result,
    kind,
    dialect: database.dialect,
    processes: servers.length,
    connections: connectionsFor(servers.length),
    serverCores: cores(serverTicks),
    cpuUsPerRequest: usPerResponse(serverTicks),
    databaseCores: cores(dbTicks),
    dbCpuUsPerRequest: usPerResponse(dbTicks),
    loadCores,
    foreignCores: Math.max(0, cores(machineTicks - serverTicks - dbTicks - ownTicks) - loadCores),
    latencies,
    attempts: 1,
    waits,
  };
}

interface Summary {
  rps: number;
  cpuUsPerRequest: number;
  dbCpuUsPerRequest: number;
  p50: number;
  p99: number;
  errors: number;
  responses: number;
}

function summarize(runs: Run[]): Summary {
  const all = new Float64Array(runs.reduce((n, r) => n + r.latencies.length, 0));
  let at = 0;
  for (const r of runs) {
    all.set(r.latencies, at);
    at += r.latencies.length;
  }
  all.sort();
  const pct = (p: number) => (all.length ? all[Math.min(all.length - 1, Math.ceil((p / 100) * all.length) - 1)]! : NaN);
  const responses = runs.reduce((n, r) => n + r.responses, 0);
  const seconds = runs.reduce((n, r) => n + r.seconds, 0);
  const perResponse = (us: (r: Run) => number) => runs.reduce((n, r) => n + us(r) * r.responses, 0) / Math.max(1, responses);
  return {
    rps: responses / seconds,
    cpuUsPerRequest: perResponse((r) => r.cpuUsPerRequest),
    dbCpuUsPerRequest: perResponse((r) => r.dbCpuUsPerRequest),
    p50: pct(50),
    p99: pct(99),
    errors: runs.reduce((n, r) => n + r.non2xx + r.errors, 0),
    responses,
  };
}

/** "Textwire on PostgreSQL", "floor". */
const label = (s: { kind: Kind; dialect: Dialect }) => (s.kind === "floor" ? "floor" : `Textwire on ${DIALECT_NAMES[s.dialect]}`);

async function sanity(server: Server, route: Route): Promise<number> {
  const req = route.requests[0]!;
  const id = `check-${randomBytes(6).toString("hex")}`;
  const body = req.body?.replace("[<id>]", id);
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, v.replace("[<id>]", id)]));
  const res = await fetch(server.url + req.path, { method: req.method, headers, body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  const problem = route.check(res.status, json);
  if (problem) throw new Error(`${label({ kind: server.kind, dialect: server.database.dialect })} ${route.name}: ${problem}\n${text.slice(0, 500)}`);
  return text.length;
}

// ---- the routes -------------------------------------------------------------------------

const HISTORY_PHONES = ["+14155550100", "+447700900123", "+34612345678", "+4915123456789"];
const WRITE_PHONES = ["+14155550201", "+447700900456", "+34612345999", "+5511987654321"];

const isRecordList = (v: unknown, n: number) =>
  Array.isArray(v) && v.length === n && v.every((m) => m && typeof m.id === "string" && typeof m.timestamp === "string");

const sentCheck = (status: number, b: any) =>
  status === 200 && b?.success === true && typeof b.message_id === "string" && typeof b.timestamp === "string"
    ? null
    : `expected 200 { success, message_id, timestamp }, got ${status}`;

function historyRoute(phones: string[], total: number): Route {
  return {
    name: "GET /api/messages/:phone?limit=50",
    requests: phones.map((p) => ({ method: "GET", path: `/api/messages/${encodeURIComponent(p)}?limit=50`, headers: AUTH })),
    check: (status, b) =>
      status === 200 && b?.success === true && isRecordList(b.messages, 50) && b.total === total && b.limit === 50 && b.offset === 0
        ? null
        : `expected 200 with 50 messages and total ${total}, got ${status}`,
  };
}

function pollRoute(since?: number): Route {
  const query = since === undefined ? "" : `since=${encodeURIComponent(isoTime(since))}&`;
  return {
    name: `GET /api/messages/poll?${query ? "since=…&" : ""}limit=100`,
    requests: [{ method: "GET", path: `/api/messages/poll?${query}limit=100`, headers: AUTH }],
    check: (status, b) =>
      status === 200 && b?.success === true && isRecordList(b.messages, 100) && b.count === 100 && b.has_more === true
        ? null
        : `expected 200 with 100 messages and has_more, got ${status}`,
  };
}

const MAIN_ROUTES: Route[] = [
  historyRoute(HISTORY_PHONES.slice(0, 1), 100),
  pollRoute(),
  {
    name: "POST /api/send",
    requests: WRITE_PHONES.map((phone, i) => ({
      method: "POST",
      path: "/api/send",
      headers: JSON_AUTH,
      body: JSON.stringify({ phone, message: TEXTS[i]! }),
    })),
    check: sentCheck,
  },
  {
    name: "POST /webhooks/loopback",
    idReplacement: true,
    requests: WRITE_PHONES.map((phone, i) => ({
      method: "POST",
      path: "/webhooks/loopback",
      headers: JSON_AUTH,
      // A unique network id per request, as a real network sends (deduplication lookup included).
      body: JSON.stringify({ phone, message: TEXTS[i + 4]!, id: "bench-[<id>]" }),
    })),
    check: sentCheck,
  },
];

// ---- formatting ---------------------------------------------------------------------------

const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "–");
const mb = (kb: number) => (kb / 1024).toFixed(1);
const verdict = (ok: boolean) => (ok ? "**met**" : "**MISSED**");

function table(head: string[], rows: (string | number)[][]): string {
  return [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

function gitState(): string {
  const head = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT }).stdout.toString().trim();
  const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--", "src", "drizzle"], { cwd: ROOT }).stdout.toString().trim();
  return head ? `${head}${dirty ? " with uncommitted changes in src/ or drizzle/" : ""}` : "unknown";
}

// ---- main -------------------------------------------------------------------------------

interface Subject {
  kind: Kind;
  dialect: Dialect;
}

interface SubjectResult extends Subject {
  summary: Summary;
  /** One run at RATE requests per second: latency when not saturated. */
  fixedRate: Run;
  bytes: number;
}

interface RouteResult {
  route: Route;
  runs: Run[];
  /** Textwire on each database, then the floor. */
  subjects: SubjectResult[];
}

interface ServerFacts extends Subject {
  startupMs: number;
  peakRssKb: number;
  sampledRssKb: number;
}

interface MainResult {
  results: RouteResult[];
  servers: ServerFacts[];
}

interface GrowthResult {
  size: number;
  startups: number[];
  emptyStartupMs: number;
  routes: { name: string; textwire: Summary; floor: Summary; runs: Run[] }[];
  peakRssKb: number;
}

/** Textwire on each database and the floor, each on a database of its own, measured in turn per route. */
async function mainComparison(dialects: Dialect[]): Promise<MainResult> {
  const subjects: Subject[] = [...dialects.map((dialect) => ({ kind: "textwire" as const, dialect })), { kind: "floor", dialect: "sqlite" }];
  log(`starting ${subjects.map(label).join(", ")}`);
  const servers: Server[] = [];
  for (const subject of subjects) {
    const database = await newDatabase(subject.dialect, `${subject.kind}-${subject.dialect}`);
    servers.push(await startServer(subject.kind, database, subject.kind === "textwire" ? TW_LOG_LEVEL : "warn"));
    await seed(database, { total: 400, contacts: 0, heavy: HISTORY_PHONES, perHeavy: 100 });
  }
  const results: RouteResult[] = [];
  const only = (process.env.BENCH_ROUTES ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  for (const route of MAIN_ROUTES.filter((r) => only.length === 0 || only.some((o) => r.name.includes(o)))) {
    const bytes: number[] = [];
    for (const server of servers) bytes.push(await sanity(server, route));
    log(`${route.name}: warm-up`);
    for (const server of servers) await load([server.url], route, WARMUP);
    const runs: Run[] = [];
    for (let round = 0; round < 2; round++) {
      for (const server of servers) {
        const run = await measure([server], route, SECONDS);
        log(`${route.name}: ${label(run)} ${f0(run.rps)} req/s, p99 ${f2(run.p99)} ms, errors ${run.non2xx + run.errors}, foreign CPU ${f2(run.foreignCores)}`);
        runs.push(run);
      }
    }
    const fixedRate: Run[] = [];
    for (const server of servers) {
      const run = await measure([server], route, SECONDS, { paced: RATE });
      log(`${route.name}: ${label(run)} at ${RATE} req/s offered: p50 ${f2(run.p50)} ms, p99 ${f2(run.p99)} ms`);
      fixedRate.push(run);
    }
    results.push({
      route,
      runs,
      subjects: subjects.map((subject, i) => ({
        ...subject,
        summary: summarize(runs.filter((r) => r.kind === subject.kind && r.dialect === subject.dialect)),
        fixedRate: fixedRate[i]!,
        bytes: bytes[i]!,
      })),
    });
  }
  const facts = servers.map((server, i) => ({ ...subjects[i]!, startupMs: server.startupMs, peakRssKb: server.peakRssKb(), sampledRssKb: server.maxRssKb }));
  for (const server of servers) {
    await server.stop();
    await server.database.drop();
  }
  return { results, servers: facts };
}

const SEND_ROUTE = MAIN_ROUTES.find((r) => r.name === "POST /api/send")!;
/** A send with a fresh Idempotency-Key: its message is stored in a unit of work with the key. */
const IDEMPOTENT_SEND_ROUTE: Route = {
  ...SEND_ROUTE,
  name: "POST /api/send with Idempotency-Key",
  idReplacement: true,
  requests: SEND_ROUTE.requests.map((r) => ({ ...r, headers: { ...r.headers, "idempotency-key": "bench-[<id>]" } })),
};
const CLOCK_ROUTES = [SEND_ROUTE, IDEMPOTENT_SEND_ROUTE];
const CLOCK_PROCESSES = [1, 2, 3];

/** One route's sends per second with 1, 2 and 3 API processes on one database. */
interface ClockSeries {
  dialect: Dialect;
  route: Route;
  runs: Run[];
}

/**
 * The clock's cost: sends per second with 1, 2 and 3 API processes (`bun run start api`)
 * on one database, one load generator spreading its connections over them.
 */
async function clockScaling(dialect: Dialect): Promise<ClockSeries[]> {
  const database = await newDatabase(dialect, `clock-${dialect}`);
  const servers: Server[] = [];
  const series = CLOCK_ROUTES.map((route) => ({ dialect, route, runs: [] as Run[] }));
  for (const n of CLOCK_PROCESSES) {
    while (servers.length < n) {
      const server = await startServer("textwire", database, TW_LOG_LEVEL, "api");
      for (const route of CLOCK_ROUTES) await sanity(server, route);
      servers.push(server);
    }
    for (const { route, runs } of series) {
      await load(servers.map((s) => s.url), route, WARMUP);
      const run = await measure(servers, route, SECONDS, { waits: true });
      log(
        `clock, ${DIALECT_NAMES[dialect]}, ${n} API process${n > 1 ? "es" : ""}, ${route.name}: ${f0(run.rps)} sends/s, p99 ${f2(run.p99)} ms, ` +
          `errors ${run.non2xx + run.errors}${run.waits ? `, waiting for a row lock ${f2(run.waits.lock)} of ${f2(run.waits.active)} busy` : ""}`,
      );
      runs.push(run);
    }
  }
  for (const server of servers) await server.stop();
  await database.drop();
  return series;
}

async function growthAt(size: number): Promise<GrowthResult> {
  const database = await newDatabase("sqlite", `growth-${size}`);
  // Textwire creates the schema (its own migrations), then the messages are written directly.
  const first = await startServer("textwire", database, "info");
  const emptyStartupMs = first.startupMs;
  await first.stop();
  log(`growth ${f0(size)}: seeding`);
  const t0 = performance.now();
  const heavy = HISTORY_PHONES.concat("+12025550147");
  const { middle } = seedSqlite(database.url, { total: size, contacts: 10_000, heavy, perHeavy: 200 });
  log(`growth ${f0(size)}: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  const startups: number[] = [];
  for (let i = 0; i < 3; i++) {
    const s = await startServer("textwire", database, "info");
    startups.push(s.startupMs);
    await s.stop();
  }
  const routes = [historyRoute(heavy, 200), pollRoute(middle)];
  const out: GrowthResult["routes"] = routes.map((r) => ({ name: r.name, textwire: undefined as never, floor: undefined as never, runs: [] }));
  let peakRssKb = 0;
  for (const kind of ["textwire", "floor"] as const) {
    const server = await startServer(kind, database, kind === "textwire" ? TW_LOG_LEVEL : "warn");
    for (const [i, route] of routes.entries()) {
      await sanity(server, route);
      await load([server.url], route, WARMUP);
      const run = await measure([server], route, SECONDS);
      log(`growth ${f0(size)} ${route.name}: ${kind} ${f0(run.rps)} req/s, p99 ${f2(run.p99)} ms, foreign CPU ${f2(run.foreignCores)}`);
      out[i]!.runs.push(run);
      out[i]![kind] = summarize([run]);
    }
    if (kind === "textwire") peakRssKb = server.peakRssKb();
    await server.stop();
  }
  await database.drop();
  return { size, startups, emptyStartupMs, routes: out, peakRssKb };
}

interface Report {
  main: MainResult;
  clock: ClockSeries[];
  growth: GrowthResult[];
  startedAt: Date;
  load0: number[];
  postgresVersion?: string;
}

function report({ main, clock, growth, startedAt, load0, postgresVersion }: Report): string {
  const lines: string[] = [];
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const textwires = main.servers.filter((s) => s.kind === "textwire");
  const onPostgres = textwires.some((s) => s.dialect === "postgres");
  lines.push("# Textwire benchmark", "");
  lines.push(
    `Run ${startedAt.toISOString()} with \`bun run bench\` (test/bench/run.ts): ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ` +
      `Bun ${Bun.version}, Node ${Bun.spawnSync(["node", "--version"]).stdout.toString().trim()}, ` +
      `autocannon ${(JSON.parse(readFileSync(join(ROOT, "node_modules/autocannon/package.json"), "utf8")) as { version: string }).version}, ` +
      `${postgresVersion ? `PostgreSQL ${postgresVersion} on the same machine, ` : ""}Textwire ${gitState()}.`,
    "",
    `Settings: ${CONNECTIONS} connections, ${WARMUP} s warm-up per server and route, then ${SECONDS} s runs, the servers in turn ` +
      `(${main.servers.map(label).join(", ")}), twice; load average before the run ${load0.map((l) => l.toFixed(2)).join(" ")}. ` +
      `Textwire runs with \`bun run start\`, PORT=0, RATE_LIMIT_PER_MINUTE=0, WORKFLOWS_DIR=off and LOG_LEVEL=${TW_LOG_LEVEL} ` +
      "(at the default `info` it writes one JSON log line per request; BENCH_LOG_LEVEL=info measures that)" +
      (onPostgres ? "; on PostgreSQL with DATABASE_URL naming a database created for the run and the default DATABASE_POOL_SIZE (10)" : "") +
      ". The floor (test/bench/floor.ts) is the same routes and rules on raw Bun.serve and bun:sqlite prepared statements. " +
      "Latencies in milliseconds over every response; errors are non-2xx answers plus socket errors and timeouts. " +
      "Server CPU is the serving process's; database CPU, on PostgreSQL, is that of the database's backends plus the server's " +
      "WAL writer, background writer and checkpointer (SQLite works inside the server process). The load generator " +
      "(autocannon on Node) and PostgreSQL share the 2 cores with the server, so absolute numbers are lower than on separate machines; the ratios are what count.",
    "",
  );

  lines.push("## Throughput and latency", "");
  const rows: (string | number)[][] = [];
  for (const r of main.results) {
    const floor = r.subjects.find((s) => s.kind === "floor")!.summary;
    r.subjects.forEach((s, i) =>
      rows.push([
        i === 0 ? `\`${r.route.name}\`` : "",
        s.kind === "textwire" ? "Textwire" : "floor",
        DIALECT_NAMES[s.dialect],
        f0(s.summary.rps),
        f2(s.summary.p50),
        f2(s.summary.p99),
        f0(s.summary.errors),
        s.kind === "textwire" ? `**${f2(s.summary.rps / floor.rps)}**` : "",
        f0(s.summary.cpuUsPerRequest),
        s.dialect === "postgres" ? f0(s.summary.dbCpuUsPerRequest) : "in server",
        f0(s.bytes),
      ]),
    );
  }
  lines.push(
    table(["route", "server", "database", "req/s", "p50 ms", "p99 ms", "errors", "req/s vs floor", "server CPU µs/req", "database CPU µs/req", "response bytes"], rows),
    "",
  );
  if (onPostgres && textwires.some((s) => s.dialect === "sqlite")) {
    const ratios = main.results.map((r) => {
      const [sqlite, postgres] = (["sqlite", "postgres"] as const).map((d) => r.subjects.find((s) => s.kind === "textwire" && s.dialect === d)!.summary);
      return `\`${r.route.name}\` ${f2(postgres!.rps / sqlite!.rps)}× the requests per second, ${f2(postgres!.cpuUsPerRequest / sqlite!.cpuUsPerRequest)}× the server CPU per request`;
    });
    lines.push(`One process on PostgreSQL against one on SQLite: ${ratios.join("; ")}.`, "");
  }

  lines.push("Each measured run (server CPU, database CPU, load-generator CPU and CPU used by anything else on the machine, in cores):", "");
  const runRows: (string | number)[][] = [];
  for (const r of main.results) {
    r.runs.forEach((run, i) =>
      runRows.push([
        i === 0 ? `\`${r.route.name}\`` : "",
        run.kind,
        DIALECT_NAMES[run.dialect],
        f0(run.rps),
        f2(run.p50),
        f2(run.p99),
        f2(run.max),
        f0(run.non2xx + run.errors),
        f2(run.serverCores),
        f0(run.cpuUsPerRequest),
        run.dialect === "postgres" ? f2(run.databaseCores) : "",
        f2(run.loadCores),
        f2(run.foreignCores),
        run.attempts,
      ]),
    );
  }
  lines.push(
    table(["route", "server", "database", "req/s", "p50", "p99", "max", "errors", "server CPU", "CPU µs/req", "database CPU", "load CPU", "other CPU", "attempts"], runRows),
    "",
  );

  lines.push(
    `Latency when not saturated: ${f0(RATE)} requests per second sent on an even schedule over ${CONNECTIONS} keep-alive ` +
      "connections (open loop, raw sockets in test/bench/load.mjs, since autocannon's own rate limit sends each second's quota " +
      "in one burst), latency counted from the write of each request; one run per server:",
    "",
  );
  const pacedRows: (string | number)[][] = [];
  for (const r of main.results) {
    r.subjects.forEach((s, i) =>
      pacedRows.push([
        i === 0 ? `\`${r.route.name}\`` : "",
        s.kind === "textwire" ? "Textwire" : "floor",
        DIALECT_NAMES[s.dialect],
        f0(s.fixedRate.rps),
        f2(s.fixedRate.p50),
        f2(s.fixedRate.p99),
        f2(s.fixedRate.max),
        f0(s.fixedRate.non2xx + s.fixedRate.errors),
      ]),
    );
  }
  lines.push(table(["route", "server", "database", "req/s", "p50 ms", "p99 ms", "max ms", "errors"], pacedRows), "");

  if (clock.length) {
    lines.push(`## The clock: sends with ${CLOCK_PROCESSES.join(", ")} API processes on one database`, "");
    lines.push(
      `\`POST /api/send\` as fast as answered, without and with an Idempotency-Key (a fresh one a request), spread by one load ` +
        `generator over ${CLOCK_PROCESSES.join(", ")} processes started with \`bun run start api\` on one database (connections rounded ` +
        `up to a multiple of the processes); a warm-up, then one ${SECONDS} s run each. On PostgreSQL, pg_stat_activity is sampled ` +
        "every 20 ms: the mean number of the database's connections busy, waiting for a row lock, and writing or flushing WAL " +
        "(committing). CPU in cores, all processes together.",
      "",
    );
    const clockRows: (string | number)[][] = [];
    for (const { route, runs } of clock) {
      for (const run of runs) {
        clockRows.push([
          run.processes === CLOCK_PROCESSES[0] ? DIALECT_NAMES[run.dialect] : "",
          run.processes === CLOCK_PROCESSES[0] ? (route === SEND_ROUTE ? "plain" : "Idempotency-Key") : "",
          run.processes,
          run.connections,
          f0(run.rps),
          f0(run.rps / run.processes),
          `${f2(run.rps / runs[0]!.rps)}×`,
          f2(run.p50),
          f2(run.p99),
          f0(run.non2xx + run.errors),
          f2(run.serverCores),
          run.dialect === "postgres" ? f2(run.databaseCores) : "in server",
          f2(run.loadCores),
          f2(run.foreignCores),
          run.waits ? f2(run.waits.active) : "",
          run.waits ? f2(run.waits.lock) : "",
          run.waits ? f2(run.waits.wal) : "",
        ]);
      }
    }
    lines.push(
      table(
        ["database", "send", "API processes", "connections", "sends/s", "per process", "vs 1 process", "p50 ms", "p99 ms", "errors", "server CPU", "database CPU", "load CPU", "other CPU", "busy connections", "waiting for a row lock", "writing WAL"],
        clockRows,
      ),
      "",
    );
    lines.push(
      "Why: every insert moves the one clock row (`message_clock`) in its statement (src/db/postgres/messages.ts), and " +
        "the row stays locked until that transaction commits, WAL flush included, so inserting transactions on all " +
        "processes take turns. Within a process, plain sends that arrive while an insert is being written go together in " +
        "the next statement (one clock move, one commit): the turns are taken by batches. With an Idempotency-Key the " +
        "message is stored in a unit of work with its key, one message a transaction, and the row is held across the " +
        "round trips that attach the key and COMMIT as well. More processes add capacity for HTTP, JSON and checks, not " +
        "for inserts: once the row is always taken, sends per second stay at 1 / (time one transaction holds it), however " +
        "many processes send. On SQLite the processes take turns for the file's write lock (busy_timeout) the same way, " +
        "on one machine.",
      "",
    );
    for (const { route, runs } of clock) {
      const last = runs[runs.length - 1]!;
      if (!last.waits) continue;
      const cpu = last.serverCores + last.databaseCores + last.loadCores + last.foreignCores;
      lines.push(
        `${route === SEND_ROUTE ? "Plain sends" : "Sends with an Idempotency-Key"}, ${last.processes} processes: ` +
          `${f2(last.waits.lock)} of ${f2(last.waits.active)} busy connections waited for a row lock on average, ` +
          `${f2(cpu)} of ${cpus().length} cores busy (servers, PostgreSQL, load generator and others): ` +
          (last.waits.lock >= 1
            ? `the clock row limits them (${f0(last.rps)}/s, ${f0(1e6 / last.rps)} µs a send).`
            : cpu >= cpus().length - 0.3
              ? "CPU limits them, not the clock."
              : "the clock row is seldom waited for."),
        "",
      );
    }
  }

  lines.push("## Memory and start-up", "");
  lines.push(
    table(
      ["server", "peak RSS (VmHWM)", "highest sampled RSS during load", "start-up (spawn to `listening on`)"],
      [
        ...main.servers.map((s) => [label(s), `${mb(s.peakRssKb)} MB`, `${mb(s.sampledRssKb)} MB`, `${f0(s.startupMs)} ms`]),
        ...growth.map((g) => [`Textwire on SQLite, ${f0(g.size)} messages (history and poll)`, `${mb(g.peakRssKb)} MB`, "", ""]),
      ],
    ),
    "",
  );

  if (growth.length) {
    lines.push("## Growth (SQLite)", "");
    lines.push(
      "Messages written directly into a database Textwire created: 10,000 contacts chosen uniformly, about half " +
        "inbound, timestamps 1 s apart, plus 5 contacts with exactly 200 messages each spread over the whole time. " +
        "History: those 5 contacts in turn, 50 of 200 messages a page. Poll: `since` = the middle of the time range, " +
        "100 messages a page, has_more true. One run each, after a warm-up; the floor on the same file.",
      "",
    );
    const growthRows: (string | number)[][] = [];
    for (const [i, route] of growth[0]!.routes.entries()) {
      for (const g of growth) {
        const r = g.routes[i]!;
        growthRows.push([
          `\`${route.name}\``,
          f0(g.size),
          f0(r.textwire.rps),
          f2(r.textwire.p50),
          f2(r.textwire.p99),
          f0(r.textwire.cpuUsPerRequest),
          f0(r.textwire.errors),
          f0(r.floor.rps),
          f2(r.floor.p99),
          r.runs.map((run) => f2(run.foreignCores)).join(" / "),
        ]);
      }
    }
    lines.push(table(["route", "messages", "Textwire req/s", "p50 ms", "p99 ms", "CPU µs/req", "errors", "floor req/s", "floor p99 ms", "other CPU (Textwire / floor run)"], growthRows), "");
    lines.push(
      table(
        ["messages", "Textwire start-up (spawn to `listening on`), median of 3", "each", "empty database"],
        growth.map((g) => [f0(g.size), `${f0(median(g.startups))} ms`, g.startups.map((s) => f0(s)).join(", "), `${f0(g.emptyStartupMs)} ms`]),
      ),
      "",
    );
  }

  lines.push("## Targets", "");
  const targets: (string | number)[][] = [];
  const each = (fn: (r: RouteResult, s: SubjectResult, floor: Summary) => void) => {
    for (const r of main.results) {
      const floor = r.subjects.find((s) => s.kind === "floor")!.summary;
      for (const s of r.subjects) if (s.kind === "textwire") fn(r, s, floor);
    }
  };
  each((r, s, floor) => {
    const ratio = s.summary.rps / floor.rps;
    targets.push([`\`${r.route.name}\` on ${DIALECT_NAMES[s.dialect]}: throughput ≥ 0.6 × floor`, ratio.toFixed(3), verdict(ratio >= 0.6)]);
  });
  each((r, s, floor) => {
    targets.push([
      `\`${r.route.name}\` on ${DIALECT_NAMES[s.dialect]}: p99 ≤ 5 ms at ${CONNECTIONS} connections`,
      `${f2(s.summary.p99)} ms flat out (floor ${f2(floor.p99)} ms); ${f2(s.fixedRate.p99)} ms at ${f0(RATE)} req/s`,
      verdict(s.summary.p99 <= 5) + (s.fixedRate.p99 <= 5 ? ` (met at ${f0(RATE)} req/s)` : ` (also missed at ${f0(RATE)} req/s)`),
    ]);
  });
  if (growth.length >= 2) {
    const small = growth[0]!;
    const big = growth[growth.length - 1]!;
    for (const [i, route] of small.routes.entries()) {
      const ratio = big.routes[i]!.textwire.p99 / route.textwire.p99;
      targets.push([
        `\`${route.name}\` p99 at ${f0(big.size)} ≤ 1.5 × at ${f0(small.size)}`,
        `${f2(big.routes[i]!.textwire.p99)} / ${f2(route.textwire.p99)} ms = ${f2(ratio)}×`,
        verdict(ratio <= 1.5),
      ]);
    }
  } else {
    targets.push(["history and poll p99 at 1M ≤ 1.5 × at 10k", "not measured (BENCH_GROWTH=0)", ""]);
  }
  for (const s of textwires) {
    const rssMb = Math.max(s.peakRssKb, s.sampledRssKb) / 1024;
    targets.push([`${label(s)}: peak RSS ≤ 150 MB`, `${rssMb.toFixed(1)} MB`, verdict(rssMb <= 150)]);
  }
  lines.push(table(["target", "measured", "verdict"], targets), "");
  lines.push(
    `Reading the p99 target: with ${CONNECTIONS} connections each sending its next request as soon as the last is answered, ` +
      `the mean latency is ${CONNECTIONS} / throughput (Little's law), so at saturation p99 ≤ 5 ms needs well over ` +
      `${f0((CONNECTIONS / 5) * 1000)} req/s; the floor does not reach it on this machine either. The paced runs at ${f0(RATE)} req/s ` +
      "show the latency below saturation.",
    "",
  );
  const allRuns = [...main.results.flatMap((r) => r.runs), ...clock.flatMap((c) => c.runs), ...growth.flatMap((g) => g.routes.flatMap((r) => r.runs))];
  const disturbed = allRuns.filter((r) => r.foreignCores > DISTURBED).length;
  if (disturbed) {
    lines.push(
      `**Caution**: in ${disturbed} of ${allRuns.length} measured runs other processes on this machine used more than ${DISTURBED} of a core ` +
        "(column \"other CPU\"), even after waiting and repeating; those numbers understate the servers.",
      "",
    );
  }
  return lines.join("\n");
}

async function main() {
  const startedAt = new Date();
  const load0 = loadavg();
  const t0 = performance.now();
  const { dialects, adminUrl } = await benchDatabases(log);
  postgresAdminUrl = adminUrl;
  if (adminUrl) watch = await PostgresWatch.open(adminUrl);
  const growthOn = GROWTH && dialects.includes("sqlite");
  log(
    `temporary files in ${tmp}; Textwire on ${dialects.map((d) => DIALECT_NAMES[d]).join(" and ")}; ${SECONDS} s runs, ` +
      `clock ${CLOCK ? "on" : "off"}, growth ${growthOn ? GROWTH_SIZES.join(", ") : "off"}`,
  );
  const mainResult = await mainComparison(dialects);
  const clock: ClockSeries[] = [];
  if (CLOCK) for (const dialect of (["postgres", "sqlite"] as const).filter((d) => dialects.includes(d))) clock.push(...(await clockScaling(dialect)));
  const growth: GrowthResult[] = [];
  if (growthOn) for (const size of GROWTH_SIZES) growth.push(await growthAt(size));
  const text = report({ main: mainResult, clock, growth, startedAt, load0, postgresVersion: await watch?.version() });
  process.stdout.write(`\n${text}\n`);
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, text + "\n");
  log(`written to ${OUT}; took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** Stops the servers and removes the temporary databases and files (unless BENCH_KEEP=1). */
async function cleanUp() {
  for (const server of [...running]) await server.stop();
  for (const database of [...undropped]) await database.drop().catch((err) => log(`could not drop ${database.name}: ${err}`));
  await watch?.close();
  if (!KEEP) rmSync(tmp, { recursive: true, force: true });
}

// An interrupted run leaves no server, database or file behind.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping`);
    void cleanUp().finally(() => process.exit(130));
  });
}

try {
  await main();
} finally {
  await cleanUp();
}
