/**
 * `bun run bench`: Textwire on SQLite and on PostgreSQL against the floor (test/bench/floor.ts,
 * the same routes and rules written directly on Bun.serve), the message clock's cost with 1, 2
 * and 3 API processes on one database, then growth to 1 million stored messages. Prints the
 * tables and writes them to bench/results.md.
 *
 *   bun run bench                                              full run (about 12 minutes)
 *   BENCH_SECONDS=1 BENCH_GROWTH=0 BENCH_CLOCK=0 bun run bench   quick smoke run (about 2 minutes)
 *
 * Needs wrk (Debian/Ubuntu package `wrk`): when it is missing the run installs it with
 * `apt-get install -y wrk` as root, else stops with a line saying how. The paced generator,
 * test/bench/paced.c, is compiled for each run into its temporary directory with
 * `cc -O2 ... -lm` (Debian/Ubuntu package `gcc`).
 *
 * Environment:
 *   BENCH_DATABASES     databases Textwire is measured on, e.g. "sqlite" or "sqlite,postgres"
 *                       (default: both when PostgreSQL answers at the admin URL, else sqlite)
 *   BENCH_DATABASE_URL  PostgreSQL admin URL (a role that may create databases; default
 *                       TEST_DATABASE_URL, else postgres://postgres@127.0.0.1:5432/postgres);
 *                       each part of the run creates a fresh database there and drops it after
 *   BENCH_SECONDS       measured seconds per run (default 5; wrk takes whole seconds)
 *   BENCH_WARMUP        warm-up seconds per server and route (default 1)
 *   BENCH_ROUNDS        rounds of the main comparison, the servers in turn each (default 3)
 *   BENCH_CONNECTIONS   connections (default 32)
 *   BENCH_PIN=0         does not pin (default: with taskset and 2 cores or more, the load
 *                       generator on CPU 0 and the servers on CPU 1)
 *   BENCH_CLOCK=0       skips the clock part
 *   BENCH_GROWTH=0      skips the growth part (SQLite only)
 *   BENCH_GROWTH_SIZES  stored messages (default "10000,1000000")
 *   BENCH_WEBHOOKS=0    skips the outbound webhooks part
 *   BENCH_WEBHOOK_EVENTS events delivered in each webhook measurement (default 5000)
 *   BENCH_ONLY=webhooks runs only the outbound webhooks part
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
 *   RATE_LIMIT_PER_MINUTE=0 (no 429s), WORKFLOWS_DIR=off and LOG_LEVEL=warn (at `info` every
 *   request writes a log line; BENCH_LOG_LEVEL=info measures it). The port comes from its
 *   `listening on` line, or from /proc (its listening socket); then GET /health.
 * - The floor is started the same way (`bun test/bench/floor.ts`), twice per database: two
 *   copies, A and B, measured in the same turns (A/A), so the report shows how much two runs
 *   of one server differ. On PostgreSQL the floor is started on a postgres:// URL; when it
 *   does not start (or does not answer the seeded history), Textwire on PostgreSQL is
 *   compared with the SQLite floor and the report says so.
 * - Saturation: wrk -t1 -c32 (test/bench/wrk/*.lua: every send and webhook with its own
 *   phone, every webhook its own network id; each run its own block of phone numbers; a
 *   done() that prints one JSON line with wrk's exact percentiles and errors). Per route a
 *   warm-up of each server, then BENCH_ROUNDS rounds with the servers in turn; the report
 *   gives the median and the range over the rounds.
 * - Pinning: with taskset, wrk and the paced generator run on CPU 0, the servers on CPU 1
 *   (`taskset -c 1 bun run start`; the child inherits it). PostgreSQL is a system service and
 *   is not pinned.
 * - Fixed rate: per route and database, half the floor's median peak, sent by
 *   test/bench/paced.c (C, epoll; open loop on an even schedule, latency counted from each
 *   request's due time) to Textwire and floor A; its CPU, its own lag (due to written) and
 *   whether it kept the rate (every due request sent, lag p99 under 1 ms) are reported.
 * - Every database is seeded with 400 messages (4 contacts) so history and poll return full
 *   pages (50 and 100 messages).
 * - CPU: for every run the CPU used by the server, by PostgreSQL (the backends of the run's
 *   database and the server's WAL writer, background writer and checkpointer, found in
 *   pg_stat_activity and read from /proc), by the load generator and by anything else on the
 *   machine ("other") is recorded; disturbed runs are repeated within BENCH_QUIET_BUDGET.
 * - Memory: the serving process's VmHWM (peak RSS) and the highest VmRSS sampled every 200 ms.
 * - The clock: on each database, 1, then 2, then 3 `bun run start api` processes share one
 *   database; one wrk with a thread per process (test/bench/wrk/common.lua gives the threads
 *   the addresses in turn) sends POST /api/send, without and with a fresh Idempotency-Key. On
 *   PostgreSQL, pg_stat_activity is sampled every 20 ms: how many of the database's
 *   connections are busy, waiting for a row lock (the clock row) or writing WAL.
 *   test/bench/clock-postgres.ts measures the clock alone (inserts, no HTTP) for other designs.
 * - Growth (SQLite): a database with N messages (10,000 contacts, half inbound, timestamps
 *   strictly increasing, plus 5 contacts with exactly 200 messages each whose history is
 *   measured, so the page is the same 50 messages at every size) is written directly with
 *   bun:sqlite into a file whose schema Textwire created; then Textwire is started on it
 *   (start-up time: spawn to its `listening on` line, at LOG_LEVEL=info, median of 3) and
 *   history and poll (`since` in the middle, 100 messages a page) are measured with wrk; the
 *   floor is measured on the same file for comparison.
 * - Outbound webhooks (test/bench/webhooks.ts): on each database, events delivered per second
 *   to a receiver on 127.0.0.1, from a backlog (replay) and live (while inbound messages are
 *   written).
 */
import { Database } from "bun:sqlite";
import type { Subprocess } from "bun";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { isoTime } from "../../src/messages/time";
import { microClock } from "../../src/vocabulary/time";
import { createTestDatabase } from "../support/postgres";
import { webhookDelivery, type WebhookBenchResult } from "./webhooks";
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
/** wrk runs whole seconds. */
const WARMUP = Math.max(1, Math.round(envNumber("BENCH_WARMUP", 1)));
/** Rounds of the main comparison (the servers in turn each round). */
const ROUNDS = Math.round(envNumber("BENCH_ROUNDS", 3));
const CONNECTIONS = Math.round(envNumber("BENCH_CONNECTIONS", 32));
const GROWTH = process.env.BENCH_GROWTH !== "0";
const CLOCK = process.env.BENCH_CLOCK !== "0";
const ONLY_WEBHOOKS = process.env.BENCH_ONLY === "webhooks";
const WEBHOOKS = process.env.BENCH_WEBHOOKS !== "0";
const WEBHOOK_EVENTS = Math.round(envNumber("BENCH_WEBHOOK_EVENTS", 5000));
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
/** Load generator on CPU 0, servers on CPU 1 (taskset), unless BENCH_PIN=0 or there is no taskset or second core. */
const PIN = process.env.BENCH_PIN !== "0" && cpus().length >= 2 && Bun.which("taskset") !== null;

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
async function startServer(kind: Kind, database: BenchDatabase, logLevel: "warn" | "info" = "warn", mode?: "api", extraEnv: Record<string, string> = {}): Promise<Server> {
  // taskset execs its command, so the pid is still bun's (and its children inherit the CPU).
  const cmd = [...(PIN ? ["taskset", "-c", "1"] : []), ...(kind === "textwire" ? ["bun", "run", "start", ...(mode ? [mode] : [])] : ["bun", "test/bench/floor.ts"])];
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: database.url,
    API_KEYS: KEY,
    RATE_LIMIT_PER_MINUTE: "0",
    WORKFLOWS_DIR: "off",
    LOG_LEVEL: logLevel,
    // Stopping a server between parts need not wait for a load balancer.
    SHUTDOWN_DRAIN_MS: process.env.SHUTDOWN_DRAIN_MS ?? "0",
    ...extraEnv,
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
  /** "[<phone>]" and "[<n>]" are filled in per request, in headers and body (test/bench/paced.c). */
  body?: string;
}

interface Route {
  name: string;
  /** The wrk script (test/bench/wrk/<script>.lua) and its arguments after the phone block. */
  script: "get" | "send" | "loopback";
  args: string[];
  /** The same requests for the paced generator and the sanity check. */
  requests: LoadRequest[];
  /** Checks one answer, so that no run measures errors. */
  check(status: number, body: any): string | null;
}

/** One load run's result; latencies in milliseconds. */
interface LoadResult {
  responses: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Answers outside 2xx (wrk: status >= 400), socket errors, timeouts. */
  statusErrors: number;
  socketErrors: number;
  timeouts: number;
  /** CPU time of the load generator, µs. */
  loadCpuUs: number;
  /**
   * Paced runs: requests per second offered, the generator's lag (due to written) p50 and p99
   * (ms), requests it sent more than 1 ms late, and whether it kept the rate.
   */
  rate?: number;
  lagP50?: number;
  lagP99?: number;
  late?: number;
  keptRate?: boolean;
}

const errorsOf = (r: LoadResult) => r.statusErrors + r.socketErrors + r.timeouts;

interface Run extends LoadResult {
  subject: string;
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
  /** Runs made to get this one (disturbed ones repeated). */
  attempts: number;
  /** PostgreSQL, when asked for: what the database's connections did during the run. */
  waits?: Waits;
}

/** Connections for `servers` servers: BENCH_CONNECTIONS, rounded up to spread evenly over them. */
const connectionsFor = (servers: number) => Math.ceil(CONNECTIONS / servers) * servers;

/** Each load run gets its own block of 10 million phone numbers (test/bench/wrk/common.lua). */
let phoneBlock = 0;
function nextPhoneBase(): number {
  if (phoneBlock >= 790) throw new Error("out of phone number blocks");
  return phoneBlock++ * 10_000_000;
}

const pinned = (cpu: number) => (PIN ? ["taskset", "-c", String(cpu)] : []);

/** The JSON line of done() in test/bench/wrk/common.lua (latencies in µs). */
interface WrkLine {
  requests: number;
  duration_us: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  status_errors: number;
  connect_errors: number;
  read_errors: number;
  write_errors: number;
  timeouts: number;
}

/** The JSON line of test/bench/paced.c (latencies and lags in µs). */
interface PacedLine {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  statusErrors: number;
  socketErrors: number;
  connectErrors: number;
  timeouts: number;
  due: number;
  sent: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  late: number;
  keptRate: boolean;
  cpuUs: number;
}

/** test/bench/paced.c, compiled once per run into the temporary directory (compilePaced). */
const PACED = join(tmp, "paced");

function compilePaced(): void {
  if (!Bun.which("cc")) {
    process.stderr.write("bun run bench needs a C compiler for test/bench/paced.c: install gcc (apt-get install -y gcc), then run again\n");
    process.exit(1);
  }
  const r = Bun.spawnSync(["cc", "-O2", "-o", PACED, join(import.meta.dir, "paced.c"), "-lm"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`cc could not compile test/bench/paced.c:\n${r.stderr.toString()}`);
}

/** wrk (pinned to CPU 0) against `urls` as fast as answered: one thread a server, their connections in all. */
async function wrkLoad(urls: string[], route: Route, seconds: number): Promise<LoadResult> {
  const cmd = [
    ...pinned(0),
    "wrk",
    `-t${urls.length}`,
    `-c${connectionsFor(urls.length)}`,
    `-d${Math.max(1, Math.round(seconds))}s`,
    "--timeout",
    "10s",
    "-s",
    join(import.meta.dir, "wrk", `${route.script}.lua`),
    urls[0]!,
    "--",
    String(nextPhoneBase()),
    ...route.args,
  ];
  const env = {
    ...process.env,
    BENCH_AUTH: AUTH.authorization,
    BENCH_WRK_THREADS: String(urls.length),
    BENCH_WRK_ADDRS: urls.length > 1 ? urls.map((u) => new URL(u).host).join(",") : "",
  };
  const proc = Bun.spawn(cmd, { cwd: ROOT, env, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const line = out.trim().split("\n").findLast((l) => l.startsWith("{"));
  if (code !== 0 || !line) throw new Error(`wrk failed (exit ${code}): ${err || out || "no result"}`);
  const r = JSON.parse(line) as WrkLine;
  const s = r.duration_us / 1e6;
  return {
    responses: r.requests,
    seconds: s,
    rps: r.requests / s,
    p50: r.p50 / 1000,
    p90: r.p90 / 1000,
    p99: r.p99 / 1000,
    max: r.max / 1000,
    statusErrors: r.status_errors,
    socketErrors: r.connect_errors + r.read_errors + r.write_errors,
    timeouts: r.timeouts,
    loadCpuUs: Number(proc.resourceUsage()?.cpuTime.total ?? 0),
  };
}

/** The paced generator (test/bench/paced.c, pinned to CPU 0): `rate` requests per second on an even schedule. */
async function pacedLoad(url: string, route: Route, seconds: number, rate: number): Promise<LoadResult> {
  const { hostname, port } = new URL(url);
  // Each request as two arguments: its head without the blank line (paced.c adds content-length) and its body.
  const templates = route.requests.flatMap((r) => [
    `${r.method} ${r.path} HTTP/1.1\r\nhost: ${hostname}:${port}\r\n${Object.entries(r.headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}`,
    r.body ?? "",
  ]);
  const cmd = [...pinned(0), PACED, hostname, port, String(CONNECTIONS), String(seconds), String(rate), String(nextPhoneBase()), ...templates];
  const proc = Bun.spawn(cmd, { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  const line = out.trim().split("\n").pop();
  if (code !== 0 || !line) throw new Error(`paced load generator failed (exit ${code}): ${err || "no result"}`);
  const r = JSON.parse(line) as PacedLine;
  if (r.due !== r.sent) log(`paced: ${r.sent} of ${r.due} due requests sent`);
  return {
    responses: r.requests,
    seconds: r.seconds,
    rps: r.rps,
    p50: r.p50 / 1000,
    p90: r.p90 / 1000,
    p99: r.p99 / 1000,
    max: r.max / 1000,
    statusErrors: r.statusErrors,
    socketErrors: r.socketErrors,
    timeouts: r.timeouts,
    loadCpuUs: r.cpuUs,
    rate,
    lagP50: r.lagP50 / 1000,
    lagP99: r.lagP99 / 1000,
    late: r.late,
    keptRate: r.keptRate,
  };
}

interface MeasureOptions {
  /** Requests per second on an even schedule (else as fast as answered, by wrk). */
  paced?: number;
  /** PostgreSQL: sample what the database's connections wait for. */
  waits?: boolean;
}

/**
 * A measured run of `route` against `servers` (one, or several on one database) after a
 * quiet gate; repeated (within the budget) when other processes disturbed it.
 */
async function measure(subject: string, servers: Server[], route: Route, seconds: number, opts: MeasureOptions = {}): Promise<Run> {
  let best: Run | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    await waitQuiet();
    const run = await measureOnce(subject, servers, route, seconds, opts);
    if (!best || run.foreignCores < best.foreignCores) best = { ...run, attempts: attempt + 1 };
    if (run.foreignCores <= DISTURBED || quietBudget < seconds) break;
    log(`${route.name}: ${subject} run disturbed (other processes used ${f2(run.foreignCores)} cores); repeating`);
    quietBudget -= seconds;
  }
  return best!;
}

/** CPU ticks so far of the database's processes (none for SQLite: it works inside the server). */
async function databaseTicks(database: BenchDatabase): Promise<Map<number, number>> {
  const pids = database.name ? await watch!.processes(database.name) : [];
  return new Map(pids.map((pid) => [pid, cpuTicks(pid)]));
}

async function measureOnce(subject: string, servers: Server[], route: Route, seconds: number, opts: MeasureOptions): Promise<Run> {
  const { database, kind } = servers[0]!;
  const db0 = await databaseTicks(database);
  const busy0 = machineBusyTicks();
  const own0 = cpuTicks(process.pid);
  const cpu0 = servers.map((s) => cpuTicks(s.pid));
  const stopWaits = opts.waits && database.name ? watch!.sampleWaits(database.name) : undefined;
  const t0 = performance.now();
  const result = opts.paced ? await pacedLoad(servers[0]!.url, route, seconds, opts.paced) : await wrkLoad(servers.map((s) => s.url), route, seconds);
  const elapsed = (performance.now() - t0) / 1000;
  const waits = await stopWaits?.();
  for (const s of servers) {
    if (s.proc.exitCode !== null) throw new Error(`${subject} exited (${s.proc.exitCode}) during a run:\n${s.output.join("\n")}`);
  }
  const serverTicks = servers.reduce((n, s, i) => n + cpuTicks(s.pid) - cpu0[i]!, 0);
  const machineTicks = machineBusyTicks() - busy0;
  const ownTicks = cpuTicks(process.pid) - own0;
  // A backend that started during the run counts whole.
  let dbTicks = 0;
  for (const [pid, ticks] of await databaseTicks(database)) dbTicks += Math.max(0, ticks - (db0.get(pid) ?? 0));
  const cores = (ticks: number) => ticks / TICKS / elapsed;
  const usPerResponse = (ticks: number) => ((ticks / TICKS) * 1e6) / Math.max(1, result.responses);
  const loadCores = result.loadCpuUs / 1e6 / elapsed;
  return {
    ...result,
    subject,
    kind,
    dialect: database.dialect,
    processes: servers.length,
    connections: opts.paced ? CONNECTIONS : connectionsFor(servers.length),
    serverCores: cores(serverTicks),
    cpuUsPerRequest: usPerResponse(serverTicks),
    databaseCores: cores(dbTicks),
    dbCpuUsPerRequest: usPerResponse(dbTicks),
    loadCores,
    foreignCores: Math.max(0, cores(machineTicks - serverTicks - dbTicks - ownTicks) - loadCores),
    attempts: 1,
    waits,
  };
}

/** Median and range of one figure over the rounds. */
interface Spread {
  median: number;
  min: number;
  max: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: number[]): Spread => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });

interface Summary {
  rps: Spread;
  p50: Spread;
  p99: Spread;
  cpuUsPerRequest: number;
  dbCpuUsPerRequest: number;
  loadCores: number;
  errors: number;
}

function summarize(runs: Run[]): Summary {
  return {
    rps: spread(runs.map((r) => r.rps)),
    p50: spread(runs.map((r) => r.p50)),
    p99: spread(runs.map((r) => r.p99)),
    cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
    dbCpuUsPerRequest: median(runs.map((r) => r.dbCpuUsPerRequest)),
    loadCores: median(runs.map((r) => r.loadCores)),
    errors: runs.reduce((n, r) => n + errorsOf(r), 0),
  };
}

/** A request of `route` with its placeholders filled in, for a check. */
function filled(route: Route): LoadRequest {
  const req = route.requests[0]!;
  const n = String(nextPhoneBase());
  const fill = (s: string) => s.replaceAll("[<phone>]", `+1${2_000_000_000 + Number(n)}`).replaceAll("[<n>]", n);
  return { ...req, headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, fill(v)])), body: req.body === undefined ? undefined : fill(req.body) };
}

async function sanity(subject: string, server: Server, route: Route): Promise<void> {
  const req = filled(route);
  const res = await fetch(server.url + req.path, { method: req.method, headers: req.headers, body: req.body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  const problem = route.check(res.status, json);
  if (problem) throw new Error(`${subject} ${route.name}: ${problem}\n${text.slice(0, 500)}`);
}

// ---- the routes -------------------------------------------------------------------------

const HISTORY_PHONES = ["+14155550100", "+447700900123", "+34612345678", "+4915123456789"];

const isRecordList = (v: unknown, n: number) =>
  Array.isArray(v) && v.length === n && v.every((m) => m && typeof m.id === "string" && typeof m.timestamp === "string");

const sentCheck = (status: number, b: any) =>
  status === 200 && b?.success === true && typeof b.message_id === "string" && typeof b.timestamp === "string"
    ? null
    : `expected 200 { success, message_id, timestamp }, got ${status}`;

function getRoute(name: string, paths: string[], check: Route["check"]): Route {
  return { name, script: "get", args: paths, requests: paths.map((path) => ({ method: "GET", path, headers: AUTH })), check };
}

function historyRoute(phones: string[], total: number): Route {
  return getRoute(
    "GET /api/messages/:phone?limit=50",
    phones.map((p) => `/api/messages/${encodeURIComponent(p)}?limit=50`),
    (status, b) =>
      status === 200 && b?.success === true && isRecordList(b.messages, 50) && b.total === total && b.limit === 50 && b.offset === 0
        ? null
        : `expected 200 with 50 messages and total ${total}, got ${status}`,
  );
}

function pollRoute(since?: number): Route {
  const query = since === undefined ? "" : `since=${encodeURIComponent(isoTime(since))}&`;
  return getRoute(`GET /api/messages/poll?${query ? "since=…&" : ""}limit=100`, [`/api/messages/poll?${query}limit=100`], (status, b) =>
    status === 200 && b?.success === true && isRecordList(b.messages, 100) && b.count === 100 && b.has_more === true
      ? null
      : `expected 200 with 100 messages and has_more, got ${status}`,
  );
}

// The bodies are those of test/bench/wrk/send.lua and test/bench/wrk/loopback.lua.
const SEND_ROUTE: Route = {
  name: "POST /api/send",
  script: "send",
  args: [],
  requests: [{ method: "POST", path: "/api/send", headers: JSON_AUTH, body: JSON.stringify({ phone: "[<phone>]", message: TEXTS[0] }) }],
  check: sentCheck,
};

const MAIN_ROUTES: Route[] = [
  historyRoute(HISTORY_PHONES.slice(0, 1), 100),
  pollRoute(),
  SEND_ROUTE,
  {
    name: "POST /webhooks/loopback",
    script: "loopback",
    args: [],
    requests: [
      // A unique network id per request, as a real network sends (deduplication lookup included).
      { method: "POST", path: "/webhooks/loopback", headers: JSON_AUTH, body: JSON.stringify({ phone: "[<phone>]", message: TEXTS[1], id: "bench-[<n>]" }) },
    ],
    check: sentCheck,
  },
];

/** A send with a fresh Idempotency-Key: its message is stored in a unit of work with the key. */
const IDEMPOTENT_SEND_ROUTE: Route = {
  ...SEND_ROUTE,
  name: "POST /api/send with Idempotency-Key",
  args: ["idempotent"],
  requests: SEND_ROUTE.requests.map((r) => ({ ...r, headers: { ...r.headers, "idempotency-key": "bench-[<n>]" } })),
};

// ---- formatting ---------------------------------------------------------------------------

const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : "–");
const f3 = (n: number) => (Number.isFinite(n) ? n.toFixed(3) : "–");
const mb = (kb: number) => (kb / 1024).toFixed(1);
const verdict = (ok: boolean) => (ok ? "**met**" : "**MISSED**");
/** "2,154 (2,100–2,190)" */
const withRange = (s: Spread, fmt: (n: number) => string) => `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;

function table(head: string[], rows: (string | number)[][]): string {
  return [`| ${head.join(" | ")} |`, `| ${head.map(() => "---").join(" | ")} |`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

function gitState(): string {
  const head = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT }).stdout.toString().trim();
  const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--", "src", "drizzle"], { cwd: ROOT }).stdout.toString().trim();
  return head ? `${head}${dirty ? " with uncommitted changes in src/ or drizzle/" : ""}` : "unknown";
}

// ---- main -------------------------------------------------------------------------------

/** A server measured in the main comparison: Textwire on a database, or a copy (A or B) of the floor. */
interface Subject {
  name: string;
  kind: Kind;
  dialect: Dialect;
  server: Server;
}

/** Textwire on one database and the floor it is compared with (its two copies, for the A/A runs). */
interface Group {
  dialect: Dialect;
  textwire: Subject;
  floors: [Subject, Subject];
  /** False when the floor cannot run on PostgreSQL and the SQLite floor stands in. */
  ownFloor: boolean;
}

interface GroupResult {
  dialect: Dialect;
  ownFloor: boolean;
  textwire: Summary;
  floorA: Summary;
  floorB: Summary;
  /** Both copies' runs together: what Textwire is compared with. */
  floor: Summary;
  /** Half the floor's median peak: the paced runs' rate. */
  rate: number;
  pacedTextwire: Run;
  pacedFloor: Run;
}

interface RouteResult {
  route: Route;
  runs: Run[];
  groups: GroupResult[];
}

interface ServerFacts {
  name: string;
  kind: Kind;
  dialect: Dialect;
  startupMs: number;
  peakRssKb: number;
  sampledRssKb: number;
}

interface MainResult {
  results: RouteResult[];
  servers: ServerFacts[];
  /** Why the floor does not run on PostgreSQL, when it does not. */
  noPostgresFloor?: string;
}

interface GrowthResult {
  size: number;
  startups: number[];
  emptyStartupMs: number;
  routes: { name: string; textwire: Run; floor: Run }[];
  peakRssKb: number;
}

const SEED_400: SeedPlan = { total: 400, contacts: 0, heavy: HISTORY_PHONES, perHeavy: 100 };

async function startSubject(name: string, kind: Kind, dialect: Dialect): Promise<Subject> {
  const database = await newDatabase(dialect, name.replace(/\W+/g, "-"));
  try {
    const server = await startServer(kind, database, kind === "textwire" ? TW_LOG_LEVEL : "warn");
    await seed(database, SEED_400);
    return { name, kind, dialect, server };
  } catch (err) {
    for (const s of [...running]) if (s.database === database) await s.stop();
    await database.drop();
    throw err;
  }
}

/** Textwire on each database beside its floor; on PostgreSQL the floor is tried, the SQLite floor standing in if it fails. */
async function startGroups(dialects: Dialect[]): Promise<{ groups: Group[]; noPostgresFloor?: string }> {
  let sqliteFloors: [Subject, Subject] | undefined;
  const floorsOnSqlite = async (): Promise<[Subject, Subject]> =>
    (sqliteFloors ??= [await startSubject("floor A on SQLite", "floor", "sqlite"), await startSubject("floor B on SQLite", "floor", "sqlite")]);
  const groups: Group[] = [];
  let noPostgresFloor: string | undefined;
  for (const dialect of dialects) {
    const textwire = await startSubject(`Textwire on ${DIALECT_NAMES[dialect]}`, "textwire", dialect);
    if (dialect === "sqlite") {
      groups.push({ dialect, textwire, floors: await floorsOnSqlite(), ownFloor: true });
      continue;
    }
    try {
      const a = await startSubject("floor A on PostgreSQL", "floor", "postgres");
      await sanity(a.name, a.server, MAIN_ROUTES[0]!);
      const b = await startSubject("floor B on PostgreSQL", "floor", "postgres");
      groups.push({ dialect, textwire, floors: [a, b], ownFloor: true });
    } catch (err) {
      // The first line, and the line naming the error (Bun prints source lines between them).
      const text = String((err as Error).message ?? err).split("\n");
      const named = text.find((l) => /\b\w*Error\b|error:/.test(l));
      noPostgresFloor = [text[0], named].filter((l, i, all) => l && all.indexOf(l) === i).join(": ").slice(0, 300);
      log(`the floor does not run on PostgreSQL (${noPostgresFloor}); Textwire on PostgreSQL is compared with the SQLite floor`);
      for (const s of [...running]) if (s.kind === "floor" && s.database.dialect === "postgres") await s.stop();
      groups.push({ dialect, textwire, floors: await floorsOnSqlite(), ownFloor: false });
    }
  }
  return { groups, noPostgresFloor };
}

/** Textwire on each database and the floor, each on a database of its own, measured in turn per route. */
async function mainComparison(dialects: Dialect[]): Promise<MainResult> {
  const { groups, noPostgresFloor } = await startGroups(dialects);
  const subjects = [...new Set(groups.flatMap((g) => [g.textwire, ...g.floors]))];
  log(`measuring ${subjects.map((s) => s.name).join(", ")} in turn, ${ROUNDS} rounds`);
  const results: RouteResult[] = [];
  const only = (process.env.BENCH_ROUTES ?? "").split(",").map((s) => s.trim()).filter(Boolean);
  for (const route of MAIN_ROUTES.filter((r) => only.length === 0 || only.some((o) => r.name.includes(o)))) {
    for (const s of subjects) await sanity(s.name, s.server, route);
    log(`${route.name}: warm-up`);
    for (const s of subjects) await wrkLoad([s.server.url], route, WARMUP);
    const runs: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of subjects) {
        const run = await measure(s.name, [s.server], route, SECONDS);
        log(`${route.name}: ${s.name} ${f0(run.rps)} req/s, p99 ${f2(run.p99)} ms, errors ${errorsOf(run)}, other CPU ${f2(run.foreignCores)}`);
        runs.push(run);
      }
    }
    const of = (...ss: Subject[]) => summarize(runs.filter((r) => ss.some((s) => s.name === r.subject)));
    const paced = new Map<string, Run>();
    const pacedRun = async (s: Subject, rate: number) => {
      const key = `${s.name}@${rate}`;
      if (!paced.has(key)) {
        const run = await measure(s.name, [s.server], route, SECONDS, { paced: rate });
        log(`${route.name}: ${s.name} at ${f0(rate)} req/s: p99 ${f2(run.p99)} ms, generator lag p50 ${f3(run.lagP50!)} / p99 ${f3(run.lagP99!)} ms${run.keptRate ? "" : " (rate not kept)"}`);
        paced.set(key, run);
      }
      return paced.get(key)!;
    };
    const groupResults: GroupResult[] = [];
    for (const g of groups) {
      const floor = of(...g.floors);
      const rate = Math.max(1, Math.round(floor.rps.median / 2));
      groupResults.push({
        dialect: g.dialect,
        ownFloor: g.ownFloor,
        textwire: of(g.textwire),
        floorA: of(g.floors[0]),
        floorB: of(g.floors[1]),
        floor,
        rate,
        pacedTextwire: await pacedRun(g.textwire, rate),
        pacedFloor: await pacedRun(g.floors[0], rate),
      });
    }
    results.push({ route, runs, groups: groupResults });
  }
  const servers = subjects.map((s) => ({ name: s.name, kind: s.kind, dialect: s.dialect, startupMs: s.server.startupMs, peakRssKb: s.server.peakRssKb(), sampledRssKb: s.server.maxRssKb }));
  for (const s of subjects) {
    await s.server.stop();
    await s.server.database.drop();
  }
  return { results, servers, noPostgresFloor };
}

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
 * on one database, one wrk spreading its connections over them (a thread a process).
 */
async function clockScaling(dialect: Dialect): Promise<ClockSeries[]> {
  const database = await newDatabase(dialect, `clock-${dialect}`);
  const servers: Server[] = [];
  const series = CLOCK_ROUTES.map((route) => ({ dialect, route, runs: [] as Run[] }));
  for (const n of CLOCK_PROCESSES) {
    while (servers.length < n) {
      const server = await startServer("textwire", database, TW_LOG_LEVEL, "api");
      for (const route of CLOCK_ROUTES) await sanity("Textwire (api)", server, route);
      servers.push(server);
    }
    for (const { route, runs } of series) {
      await wrkLoad(servers.map((s) => s.url), route, WARMUP);
      const run = await measure(`${n} × Textwire on ${DIALECT_NAMES[dialect]}`, servers, route, SECONDS, { waits: true });
      log(
        `clock, ${DIALECT_NAMES[dialect]}, ${n} API process${n > 1 ? "es" : ""}, ${route.name}: ${f0(run.rps)} sends/s, p99 ${f2(run.p99)} ms, ` +
          `errors ${errorsOf(run)}${run.waits ? `, waiting for a row lock ${f2(run.waits.lock)} of ${f2(run.waits.active)} busy` : ""}`,
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
  const runs: Record<Kind, Run[]> = { textwire: [], floor: [] };
  let peakRssKb = 0;
  for (const kind of ["textwire", "floor"] as const) {
    const server = await startServer(kind, database, kind === "textwire" ? TW_LOG_LEVEL : "warn");
    const name = kind === "textwire" ? "Textwire on SQLite" : "floor on SQLite";
    for (const route of routes) {
      await sanity(name, server, route);
      await wrkLoad([server.url], route, WARMUP);
      const run = await measure(name, [server], route, SECONDS);
      log(`growth ${f0(size)} ${route.name}: ${name} ${f0(run.rps)} req/s, p99 ${f2(run.p99)} ms, other CPU ${f2(run.foreignCores)}`);
      runs[kind].push(run);
    }
    if (kind === "textwire") peakRssKb = server.peakRssKb();
    await server.stop();
  }
  await database.drop();
  return { size, startups, emptyStartupMs, routes: routes.map((r, i) => ({ name: r.name, textwire: runs.textwire[i]!, floor: runs.floor[i]! })), peakRssKb };
}

/** Outbound webhooks on one database (test/bench/webhooks.ts). */
interface WebhookSeries {
  dialect: Dialect;
  result: WebhookBenchResult;
  /** Textwire's server CPU per delivered event in the backlog run, µs. */
  cpuUsPerEvent: number;
}

async function webhookBench(dialect: Dialect): Promise<WebhookSeries> {
  const database = await newDatabase(dialect, `webhooks-${dialect}`);
  const server = await startServer("textwire", database, TW_LOG_LEVEL, undefined, { ALLOW_PRIVATE_URLS: "true" });
  const before = cpuTicks(server.pid);
  const result = await webhookDelivery(server.url, KEY, WEBHOOK_EVENTS, log);
  const ticks = cpuTicks(server.pid) - before;
  await server.stop();
  await database.drop();
  // Ticks over both runs: every event was written twice and delivered twice.
  return { dialect, result, cpuUsPerEvent: ((ticks / TICKS) * 1e6) / (2 * result.events) };
}

function webhookReport(series: WebhookSeries[]): string[] {
  if (series.length === 0) return [];
  return [
    "## Outbound webhooks",
    "",
    `Events delivered per second to a receiver on 127.0.0.1 (Bun.serve in the bench process, answering 204; one delivery in 50 verified with standardwebhooks), ${f0(series[0]!.result.events)} events each. ` +
      "Backlog: the inbound messages are stored first, then an endpoint is created and replayed from the start; time from the replay's answer to the last delivery. " +
      `Live: another endpoint, then as many inbound messages written by 16 clients at once; time from the first request to the last delivery. ${PIN ? "Textwire on CPU 1, the bench process (writer and receiver) not pinned" : "Nothing pinned"}. Server CPU: Textwire's over both runs, per event written and delivered.`,
    "",
    table(
      ["database", "backlog: delivered/s", "live: delivered/s", "live: messages stored/s", "server CPU µs per event (store + deliver)", "duplicates", "bad signatures"],
      series.map((w) => [
        DIALECT_NAMES[w.dialect],
        f0(w.result.backlogPerSecond),
        f0(w.result.livePerSecond),
        f0(w.result.liveWritesPerSecond),
        f0(w.cpuUsPerEvent),
        f0(w.result.duplicates),
        f0(w.result.badSignatures),
      ]),
    ),
    "",
  ];
}

interface Report {
  webhooks: WebhookSeries[];
  main: MainResult;
  clock: ClockSeries[];
  growth: GrowthResult[];
  startedAt: Date;
  load0: number[];
  postgresVersion?: string;
}

/** The floor a group's Textwire is compared with, in words. */
const floorOf = (g: GroupResult) => (g.ownFloor ? `floor on ${DIALECT_NAMES[g.dialect]}` : "floor on SQLite (no PostgreSQL floor)");
/** Throughput ratio a route must reach against its floor. */
const targetRatio = (g: GroupResult) => (g.dialect === "sqlite" ? 0.7 : 0.5);

function report({ main, clock, growth, webhooks, startedAt, load0, postgresVersion }: Report): string {
  const lines: string[] = [];
  const textwires = main.servers.filter((s) => s.kind === "textwire");
  const version = (cmd: string[]) => Bun.spawnSync(cmd).stdout.toString().trim().split("\n")[0] ?? "?";
  lines.push("# Textwire benchmark", "");
  lines.push(
    `Run ${startedAt.toISOString()} with \`bun run bench\` (test/bench/run.ts): ${cpus().length} cores (${cpus()[0]?.model ?? "?"}), ` +
      `Bun ${Bun.version}, ${version(["wrk", "--version"]).replace(/ Copyright.*/, "")}, ${version(["cc", "--version"])} (the paced generator), ` +
      `${postgresVersion ? `PostgreSQL ${postgresVersion} on the same machine, ` : ""}Textwire ${gitState()}; ` +
      `load average before the run ${load0.map((l) => l.toFixed(2)).join(" ")}.`,
    "",
  );
  lines.push("## How measured", "");
  const pinning = PIN
    ? "Pinned with `taskset`: the load generator on CPU 0, the server on CPU 1. PostgreSQL is a system service and cannot be pinned: its processes run on either core."
    : "Not pinned (BENCH_PIN=0, or no `taskset` or fewer than 2 cores): load generator, server and database share the cores.";
  lines.push(
    `- Servers: Textwire with \`bun run start\` (PORT=0, RATE_LIMIT_PER_MINUTE=0, WORKFLOWS_DIR=off, LOG_LEVEL=${TW_LOG_LEVEL}` +
      `${main.servers.some((s) => s.dialect === "postgres" && s.kind === "textwire") ? "; on PostgreSQL a database created for the run, default DATABASE_POOL_SIZE" : ""}); ` +
      "the floor (test/bench/floor.ts), the same routes and rules written directly on Bun.serve. Each on a database of its own, seeded with 400 messages (history and poll return full pages).",
    `- Load: wrk \`-t1 -c${CONNECTIONS}\`, scripts in test/bench/wrk/ (each send and webhook with its own phone, each webhook its own network id). ${pinning}`,
    `- Rounds: a ${WARMUP} s warm-up per server and route, then ${ROUNDS} rounds of ${SECONDS} s runs with the servers in turn (${main.servers.map((s) => s.name).join(", ")}). ` +
      "Tables give the median over the rounds and, in parentheses, the lowest and highest.",
    "- A/A: the floor runs as two copies, A and B, in the same turns. Floor B / floor A shows how far two runs of one server differ: a Textwire / floor ratio that differs from a target by less than that is within noise.",
    "- Latency: wrk's percentiles over every response (1 µs resolution); errors: answers ≥ 400, socket errors and timeouts. Server CPU: the serving process's CPU time per response; database CPU (PostgreSQL): the database's backends plus the WAL writer, background writer and checkpointer; wrk CPU in cores.",
    `- Fixed rate: half the floor's median peak for the route, sent by test/bench/paced.c (C, epoll, compiled for the run; open loop: requests due on an even schedule, each sent at once on an idle one of ${CONNECTIONS} keep-alive connections, else queued for the first free one; latency counted from the time each request was due, so a queued request or a late generator counts against the server). ` +
      `${PIN ? "It is pinned to CPU 0; it" : "It"} sleeps in epoll until 50 µs before each due time, then polls. Its lag is the time from a request's due time to its write (or its queueing, when every connection is busy); it kept the rate when every due request was sent and that lag's p99 is under 1 ms.`,
    ...(main.noPostgresFloor ? [`- **The floor does not run on PostgreSQL** (${main.noPostgresFloor}): Textwire on PostgreSQL is compared with the floor on SQLite.`] : []),
    "",
  );

  lines.push(`## Throughput and latency (wrk, ${CONNECTIONS} connections, as fast as answered)`, "");
  const rows: (string | number)[][] = [];
  for (const r of main.results) {
    let first = true;
    for (const [gi, g] of r.groups.entries()) {
      const row = (name: string, s: Summary, vs: string) => {
        rows.push([
          first ? `\`${r.route.name}\`` : "",
          name === "Textwire" ? DIALECT_NAMES[g.dialect] : "",
          name,
          withRange(s.rps, f0),
          f2(s.p50.median),
          withRange(s.p99, f2),
          f0(s.errors),
          f0(s.cpuUsPerRequest),
          g.dialect === "postgres" && (name === "Textwire" || g.ownFloor) ? f0(s.dbCpuUsPerRequest) : "in server",
          f2(s.loadCores),
          vs,
        ]);
        first = false;
      };
      row("Textwire", g.textwire, `**${f3(g.textwire.rps.median / g.floor.rps.median)}**`);
      // The SQLite floor standing in for PostgreSQL's is shown once, beside Textwire on SQLite.
      if (gi === 0 || g.ownFloor) {
        row("floor A", g.floorA, "");
        row("floor B", g.floorB, `A/A ${f3(g.floorB.rps.median / g.floorA.rps.median)}`);
      }
    }
  }
  lines.push(
    table(["route", "database", "server", "req/s", "p50 ms", "p99 ms", "errors", "server CPU µs/req", "database CPU µs/req", "wrk CPU", "vs floor"], rows),
    "",
  );
  const aa = main.results.flatMap((r) => r.groups.filter((g) => g.ownFloor).map((g) => g.floorB.rps.median / g.floorA.rps.median));
  if (aa.length) {
    const noise = Math.max(...aa.map((x) => Math.abs(x - 1)));
    lines.push(
      `A/A: floor B / floor A ranges ${f3(Math.min(...aa))}–${f3(Math.max(...aa))}; differences in "vs floor" up to about ±${f3(noise)} are noise on this machine.`,
      "",
    );
  }

  lines.push("Each measured run (CPU in cores):", "");
  const runRows: (string | number)[][] = [];
  for (const r of main.results) {
    r.runs.forEach((run, i) =>
      runRows.push([
        i === 0 ? `\`${r.route.name}\`` : "",
        run.subject,
        f0(run.rps),
        f2(run.p50),
        f2(run.p99),
        f2(run.max),
        f0(errorsOf(run)),
        f2(run.serverCores),
        f0(run.cpuUsPerRequest),
        run.dialect === "postgres" ? f2(run.databaseCores) : "",
        f2(run.loadCores),
        f2(run.foreignCores),
        run.attempts,
      ]),
    );
  }
  lines.push(table(["route", "server", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "server CPU", "server µs/req", "database CPU", "wrk CPU", "other CPU", "attempts"], runRows), "");

  lines.push("## Latency at a fixed rate (half the floor's peak)", "");
  const pacedRows: (string | number)[][] = [];
  for (const r of main.results) {
    r.groups.forEach((g, gi) => {
      for (const [name, run] of [["Textwire", g.pacedTextwire], [floorOf(g), g.pacedFloor]] as const) {
        pacedRows.push([
          gi === 0 && name === "Textwire" ? `\`${r.route.name}\`` : "",
          name === "Textwire" ? DIALECT_NAMES[g.dialect] : "",
          name,
          f0(run.rate!),
          f0(run.rps),
          f2(run.p50),
          f2(run.p99),
          f2(run.max),
          f0(errorsOf(run)),
          f2(run.loadCores),
          f3(run.lagP50!),
          f3(run.lagP99!),
          f0(run.late!),
          run.keptRate ? "yes" : "**no**",
          f2(run.foreignCores),
        ]);
      }
    });
  }
  lines.push(table(["route", "database", "server", "offered req/s", "answered req/s", "p50 ms", "p99 ms", "max ms", "errors", "generator CPU", "generator lag p50 ms", "lag p99 ms", "sent > 1 ms late", "rate kept", "other CPU"], pacedRows), "");

  if (clock.length) {
    lines.push(`## The clock: sends with ${CLOCK_PROCESSES.join(", ")} API processes on one database`, "");
    lines.push(
      `\`POST /api/send\` as fast as answered, without and with an Idempotency-Key (a fresh one a request), by one wrk with a thread ` +
        `per process over ${CLOCK_PROCESSES.join(", ")} processes started with \`bun run start api\` on one database (connections rounded ` +
        `up to a multiple of the processes${PIN ? "; all processes on CPU 1" : ""}); a warm-up, then one ${SECONDS} s run each. On PostgreSQL, pg_stat_activity is sampled ` +
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
          f0(errorsOf(run)),
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
        ["database", "send", "API processes", "connections", "sends/s", "per process", "vs 1 process", "p50 ms", "p99 ms", "errors", "server CPU", "database CPU", "wrk CPU", "other CPU", "busy connections", "waiting for a row lock", "writing WAL"],
        clockRows,
      ),
      "",
    );
    lines.push(
      "Why: every insert moves the one clock row (`message_clock`) in its statement (src/db/postgres/messages.ts), and " +
        "the row stays locked until that transaction commits, WAL flush included, so inserting transactions on all " +
        "processes take turns. Within a process, plain sends that arrive while an insert is being written go together in " +
        "the next statement (one clock move, one commit). With an Idempotency-Key the message is stored in a unit of work " +
        "with its key, one message a transaction, and the row is held across the round trips that attach the key and COMMIT " +
        "as well. On SQLite the processes take turns for the file's write lock (busy_timeout) the same way.",
      "",
    );
    for (const { route, runs } of clock) {
      const last = runs[runs.length - 1]!;
      if (!last.waits) continue;
      const cpu = last.serverCores + last.databaseCores + last.loadCores + last.foreignCores;
      lines.push(
        `${route === SEND_ROUTE ? "Plain sends" : "Sends with an Idempotency-Key"}, ${last.processes} processes: ` +
          `${f2(last.waits.lock)} of ${f2(last.waits.active)} busy connections waited for a row lock on average, ` +
          `${f2(cpu)} of ${cpus().length} cores busy: ` +
          (last.waits.lock >= 1
            ? `the clock row limits them (${f0(last.rps)}/s, ${f0(1e6 / last.rps)} µs a send).`
            : cpu >= cpus().length - 0.3 || (PIN && last.serverCores >= 0.9)
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
        ...main.servers.map((s) => [s.name, `${mb(s.peakRssKb)} MB`, `${mb(s.sampledRssKb)} MB`, `${f0(s.startupMs)} ms`]),
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
        "100 messages a page, has_more true. One wrk run each after a warm-up; the floor on the same file.",
      "",
    );
    const small = growth[0]!;
    const growthRows: (string | number)[][] = [];
    for (const [i, route] of small.routes.entries()) {
      for (const g of growth) {
        const r = g.routes[i]!;
        const ratio = r.textwire.p99 / small.routes[i]!.textwire.p99;
        growthRows.push([
          `\`${route.name}\``,
          f0(g.size),
          f0(r.textwire.rps),
          f2(r.textwire.p50),
          f2(r.textwire.p99),
          g === small ? "" : `${f2(ratio)}× (target ≤ 1.5: ${verdict(ratio <= 1.5)})`,
          f0(r.textwire.cpuUsPerRequest),
          f0(errorsOf(r.textwire)),
          f0(r.floor.rps),
          f2(r.floor.p99),
          `${f2(r.textwire.foreignCores)} / ${f2(r.floor.foreignCores)}`,
        ]);
      }
    }
    lines.push(
      table(["route", "messages", "Textwire req/s", "p50 ms", "p99 ms", `p99 vs ${f0(small.size)}`, "server µs/req", "errors", "floor req/s", "floor p99 ms", "other CPU (Textwire / floor run)"], growthRows),
      "",
    );
    lines.push(
      table(
        ["messages", "Textwire start-up (spawn to `listening on`), median of 3", "each", "empty database"],
        growth.map((g) => [f0(g.size), `${f0(median(g.startups))} ms`, g.startups.map((s) => f0(s)).join(", "), `${f0(g.emptyStartupMs)} ms`]),
      ),
      "",
    );
  }

  lines.push(...webhookReport(webhooks));

  lines.push("## Targets", "");
  const targets: (string | number)[][] = [];
  for (const r of main.results) {
    for (const g of r.groups) {
      const ratio = g.textwire.rps.median / g.floor.rps.median;
      const t = targetRatio(g);
      targets.push([
        `\`${r.route.name}\` on ${DIALECT_NAMES[g.dialect]}: throughput ≥ ${t} × ${floorOf(g)}, no errors`,
        `${f3(ratio)} × floor, ${f0(g.textwire.errors)} errors`,
        verdict(ratio >= t && g.textwire.errors === 0),
      ]);
    }
  }
  for (const r of main.results) {
    for (const g of r.groups) {
      const run = g.pacedTextwire;
      targets.push([
        `\`${r.route.name}\` on ${DIALECT_NAMES[g.dialect]}: p99 ≤ 5 ms at half the ${floorOf(g)}'s peak`,
        `${f2(run.p99)} ms at ${f0(run.rate!)} req/s (floor ${f2(g.pacedFloor.p99)} ms)${run.keptRate ? "" : "; the generator did not keep the rate"}`,
        verdict(run.p99 <= 5 && errorsOf(run) === 0),
      ]);
    }
  }
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
    targets.push([`${s.name}: peak RSS under load ≤ 150 MB`, `${rssMb.toFixed(1)} MB`, verdict(rssMb <= 150)]);
  }
  lines.push(table(["target", "measured", "verdict"], targets), "");
  const allRuns = [...new Set([...main.results.flatMap((r) => [...r.runs, ...r.groups.flatMap((g) => [g.pacedTextwire, g.pacedFloor])]), ...clock.flatMap((c) => c.runs), ...growth.flatMap((g) => g.routes.flatMap((r) => [r.textwire, r.floor]))])];
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

/** wrk is a system package: installed here when missing and we are root, else the run stops saying how. */
function ensureWrk(): void {
  if (Bun.which("wrk")) return;
  if (process.getuid?.() === 0 && Bun.which("apt-get")) {
    log("wrk is missing: apt-get install -y wrk");
    let r = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "inherit", stderr: "inherit" });
    if (r.exitCode !== 0) {
      Bun.spawnSync(["apt-get", "update"], { stdout: "inherit", stderr: "inherit" });
      r = Bun.spawnSync(["apt-get", "install", "-y", "wrk"], { stdout: "inherit", stderr: "inherit" });
    }
    if (r.exitCode === 0 && Bun.which("wrk")) return;
  }
  process.stderr.write("bun run bench needs wrk: install it with `sudo apt-get install -y wrk` (Debian/Ubuntu), then run again\n");
  process.exit(1);
}

async function main() {
  const startedAt = new Date();
  const load0 = loadavg();
  const t0 = performance.now();
  ensureWrk();
  compilePaced();
  const { dialects, adminUrl } = await benchDatabases(log);
  postgresAdminUrl = adminUrl;
  if (adminUrl) watch = await PostgresWatch.open(adminUrl);
  const growthOn = GROWTH && dialects.includes("sqlite");
  log(
    `temporary files in ${tmp}; Textwire on ${dialects.map((d) => DIALECT_NAMES[d]).join(" and ")}; ${ROUNDS} rounds of ${SECONDS} s runs, ` +
      `${PIN ? "load generator on CPU 0, servers on CPU 1" : "not pinned"}, ` +
      `clock ${CLOCK ? "on" : "off"}, growth ${growthOn ? GROWTH_SIZES.join(", ") : "off"}`,
  );
  const webhooks: WebhookSeries[] = [];
  if (WEBHOOKS || ONLY_WEBHOOKS) for (const dialect of dialects) webhooks.push(await webhookBench(dialect));
  if (ONLY_WEBHOOKS) {
    const text = ["# Textwire benchmark: outbound webhooks only (BENCH_ONLY=webhooks)", "", ...webhookReport(webhooks)].join("\n");
    process.stdout.write(`\n${text}\n`);
    return;
  }
  const mainResult = await mainComparison(dialects);
  const clock: ClockSeries[] = [];
  if (CLOCK) for (const dialect of (["postgres", "sqlite"] as const).filter((d) => dialects.includes(d))) clock.push(...(await clockScaling(dialect)));
  const growth: GrowthResult[] = [];
  if (growthOn) for (const size of GROWTH_SIZES) growth.push(await growthAt(size));
  const text = report({ main: mainResult, clock, growth, webhooks, startedAt, load0, postgresVersion: await watch?.version() });
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
