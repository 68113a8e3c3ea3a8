/**
 * `bun run profile`: where a request's time goes, route by route, in Textwire and in the floor
 * (test/bench/floor.ts). Each route gets its own server (SQLite, a temporary file seeded
 * with 400 messages over HTTP) started under Bun's sampling profiler (`bun --cpu-prof`),
 * loaded by wrk (test/bench/wrk/*.lua; wrk pinned to CPU 0 and the server to CPU 1 where
 * `taskset` exists), then stopped with SIGINT so the profile is written. Samples are put in
 * buckets by the code they were taken in (self time) and printed per route as µs per
 * request: the profiled run's server CPU per request (from /proc) times each bucket's share.
 * The profiler itself costs a few percent, so compare buckets, not totals, with `bun run bench`.
 *
 *   bun run profile                       every route, Textwire and the floor, 5 s each
 *   PROFILE_ROUTES=send PROFILE_SECONDS=10 bun run profile
 *   PROFILE_OUT=bench/profile.md          the report (default); PROFILE_KEEP=1 keeps the .cpuprofile files
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dir, "../..");
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);
const OUT = resolve(ROOT, process.env.PROFILE_OUT ?? "bench/profile.md");
const KEY = `profile_${crypto.randomUUID().replaceAll("-", "")}`;
const AUTH = `Bearer ${KEY}`;
const WRK_DIR = join(import.meta.dir, "wrk");
const pinned = Bun.which("taskset") !== null;
const pin = (cpu: number, cmd: string[]) => (pinned ? ["taskset", "-c", String(cpu), ...cmd] : cmd);
const log = (msg: string) => process.stderr.write(`[profile] ${msg}\n`);

interface RouteLoad {
  name: string;
  script: string;
  args: string[];
}
const ROUTES: RouteLoad[] = [
  { name: "history (50 of 200)", script: "get.lua", args: ["0", "/api/messages/%2B14155550101?limit=50"] },
  { name: "poll (100)", script: "get.lua", args: ["0", "/api/messages/poll?limit=100"] },
  { name: "send", script: "send.lua", args: ["0"] },
  { name: "inbound webhook", script: "loopback.lua", args: ["0"] },
].filter((r) => !process.env.PROFILE_ROUTES || process.env.PROFILE_ROUTES.split(",").some((w) => r.name.includes(w.trim())));

// ---- buckets --------------------------------------------------------------------------

interface Frame {
  functionName: string;
  url: string;
}

/** The bucket of a sample, by the frame it was taken in. Order matters: the first rule that matches. */
const BUCKETS: [string, (f: Frame) => boolean][] = [
  ["SQLite (bun:sqlite, statements)", (f) => f.url === "bun:sqlite" || (f.url === "" && ["all", "run", "get", "values"].includes(f.functionName))],
  ["JSON (stringify, parse)", (f) => f.url === "" && ["stringify", "parse"].includes(f.functionName)],
  ["records (timestamps, row → record)", (f) => /src\/messages\/(time|records)\.ts|test\/bench\/floor/.test(f.url) && /isoTime|toRecord|iso/i.test(f.functionName)],
  ["phone check (libphonenumber-js)", (f) => f.url.includes("/libphonenumber-js/")],
  ["zod (input and output schemas)", (f) => f.url.includes("/zod/")],
  ["tRPC (procedure, middlewares)", (f) => f.url.includes("/@trpc/")],
  ["trpc-to-openapi", (f) => f.url.includes("/trpc-to-openapi/")],
  ["auth (SHA-256 of the key, lookup)", (f) => /src\/(api\/auth|auth\/keys)\.ts/.test(f.url) || (f.url === "" && ["Hash", "digest", "update", "timingSafeEqual"].includes(f.functionName)) || /node:crypto/.test(f.url)],
  ["logging", (f) => f.url.includes("src/log.ts")],
  ["storage port (src/db)", (f) => f.url.includes("src/db/")],
  ["service (src/messages, network)", (f) => /src\/(messages|network|background)/.test(f.url)],
  [
    "HTTP edge (routing, body, request id, headers)",
    (f) => /src\/(api\/(http|rest|trpc|client-address)|main)\.ts|test\/bench\/floor/.test(f.url) || (f.url === "" && ["Response", "requestIP", "URL", "randomUUIDv7", "fetch"].includes(f.functionName)),
  ],
  ["GC", (f) => /garbage|\(GC\)/i.test(f.functionName)],
];
const OTHER = "other JS and runtime (promises, builtins)";

interface Profile {
  nodes: { id: number; callFrame: Frame; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

function buckets(profile: Profile): Map<string, number> {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byNode = new Map<number, string>();
  const time = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    let bucket = byNode.get(id);
    if (bucket === undefined) {
      const frame = frames.get(id)!;
      bucket = frame.functionName === "(root)" || frame.functionName === "(idle)" ? "" : (BUCKETS.find(([, test]) => test(frame))?.[0] ?? OTHER);
      byNode.set(id, bucket);
    }
    if (!bucket) return;
    const dt = profile.timeDeltas[i] ?? 0;
    total += dt;
    time.set(bucket, (time.get(bucket) ?? 0) + dt);
  });
  for (const [k, v] of time) time.set(k, v / total);
  return time;
}

// ---- servers and load -----------------------------------------------------------------

function cpuTicks(pid: number): number {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return Number(f[11]) + Number(f[12]);
}

async function waitListening(proc: { stdout: ReadableStream<Uint8Array> }): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  for await (const chunk of proc.stdout) {
    text += decoder.decode(chunk, { stream: true });
    const m = /listening on (http:\/\/[^\s"]+)/.exec(text);
    if (m) return m[1]!;
  }
  throw new Error(`server exited before listening:\n${text}`);
}

async function seed(url: string) {
  const post = (path: string, phone: string, message: string) =>
    fetch(url + path, { method: "POST", headers: { authorization: AUTH, "content-type": "application/json" }, body: JSON.stringify({ phone, message }) }).then((r) => {
      if (!r.ok) throw new Error(`seeding ${path}: ${r.status}`);
    });
  for (let i = 0; i < 100; i++) {
    for (const phone of ["+14155550101", "+14155550102"]) {
      await post("/api/send", phone, `Your order #${48000 + i} has shipped and will arrive on Tuesday.`);
      await post("/webhooks/loopback", phone, `Thanks! Is the store open tomorrow? (${i})`);
    }
  }
}

interface Result {
  route: string;
  server: "textwire" | "floor";
  rps: number;
  cpuUs: number;
  shares: Map<string, number>;
}

async function profileOne(server: "textwire" | "floor", route: RouteLoad, dir: string): Promise<Result> {
  const profDir = join(dir, `${server}-${route.script}-${route.args.join("_").replace(/\W+/g, "_")}`);
  mkdirSync(profDir, { recursive: true });
  const entry = server === "textwire" ? ["--max-http-header-size=65536", "src/main.ts"] : ["test/bench/floor.ts"];
  const proc = Bun.spawn(pin(1, ["bun", "--cpu-prof", `--cpu-prof-dir=${profDir}`, ...entry]), {
    cwd: ROOT,
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", DATABASE_URL: join(dir, `${server}.db`), API_KEYS: KEY, RATE_LIMIT_PER_MINUTE: "0", WORKFLOWS_DIR: "off", LOG_LEVEL: "warn", NODE_ENV: "production" },
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    const url = await waitListening(proc);
    await seed(url);
    const wrk = (seconds: number) =>
      Bun.spawn(pin(0, ["wrk", "-t1", "-c32", `-d${seconds}s`, "-s", join(WRK_DIR, route.script), url, "--", ...route.args]), {
        env: { ...process.env, BENCH_AUTH: AUTH },
        stdout: "pipe",
        stderr: "inherit",
      });
    await wrk(1).exited; // warm-up
    const t0 = cpuTicks(proc.pid);
    const run = wrk(SECONDS);
    const out = await new Response(run.stdout).text();
    await run.exited;
    const ticks = cpuTicks(proc.pid) - t0;
    const line = out.split("\n").find((l) => l.startsWith("{"));
    if (!line) throw new Error(`wrk printed no results:\n${out}`);
    const r = JSON.parse(line) as { requests: number; duration_us: number; status_errors: number };
    if (r.status_errors > 0) throw new Error(`${server} ${route.name}: ${r.status_errors} error answers`);
    proc.kill("SIGINT");
    await proc.exited;
    const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error(`${server} wrote no profile in ${profDir}`);
    const shares = buckets(JSON.parse(readFileSync(join(profDir, file), "utf8")) as Profile);
    return { route: route.name, server, rps: r.requests / (r.duration_us / 1e6), cpuUs: (ticks * 10_000) / r.requests, shares };
  } finally {
    proc.kill("SIGKILL");
  }
}

// ---- report ---------------------------------------------------------------------------

function table(results: Result[]): string {
  const names = [...BUCKETS.map(([n]) => n), OTHER];
  const lines: string[] = [];
  for (const route of ROUTES) {
    const tw = results.find((r) => r.route === route.name && r.server === "textwire");
    const fl = results.find((r) => r.route === route.name && r.server === "floor");
    if (!tw || !fl) continue;
    lines.push(`### ${route.name}`, "");
    lines.push(`Server CPU per request while profiled: Textwire ${tw.cpuUs.toFixed(0)} µs (${tw.rps.toFixed(0)} req/s), floor ${fl.cpuUs.toFixed(0)} µs (${fl.rps.toFixed(0)} req/s).`, "");
    lines.push("| where (self time) | Textwire µs | floor µs | difference µs |", "| --- | ---: | ---: | ---: |");
    for (const name of names) {
      const a = (tw.shares.get(name) ?? 0) * tw.cpuUs;
      const b = (fl.shares.get(name) ?? 0) * fl.cpuUs;
      if (a < 0.5 && b < 0.5) continue;
      lines.push(`| ${name} | ${a.toFixed(0)} | ${b.toFixed(0)} | ${(a - b >= 0 ? "+" : "") + (a - b).toFixed(0)} |`);
    }
    lines.push("");
  }
  return lines.join("\n");
}

async function main() {
  if (!Bun.which("wrk")) {
    console.error("wrk is missing: apt-get install -y wrk (Debian's package)");
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "textwire-profile-"));
  const results: Result[] = [];
  try {
    for (const route of ROUTES) {
      for (const server of ["textwire", "floor"] as const) {
        for (const suffix of ["", "-wal", "-shm"]) rmSync(join(dir, `${server}.db${suffix}`), { force: true });
        log(`${server}: ${route.name}`);
        results.push(await profileOne(server, route, dir));
      }
    }
  } finally {
    if (process.env.PROFILE_KEEP === "1") log(`profiles kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  const report = [
    "# Where the time goes",
    "",
    `Written by \`bun run profile\` (test/bench/profile.ts) on ${new Date().toISOString().slice(0, 10)}: each route on its own`,
    `SQLite server under \`bun --cpu-prof\`, ${SECONDS} s of wrk (1 thread, 32 connections${pinned ? ", wrk on CPU 0 and the server on CPU 1" : ""}),`,
    "samples bucketed by the code they were taken in (self time), as µs of server CPU per request",
    "(each bucket's share of the samples times the CPU per request measured from /proc). Bun's",
    "native work (HTTP parsing, socket writes, promise jobs) falls under \"other JS and runtime\".",
    "The floor writes its JSON by hand in test/bench/floor.ts, so its serialization shows under",
    "\"HTTP edge\", Textwire's under \"JSON\". Compare the two servers row by row; the profiler",
    "itself costs a few percent, so totals differ a little from `bun run bench`.",
    "",
    table(results),
  ].join("\n");
  mkdirSync(resolve(OUT, ".."), { recursive: true });
  writeFileSync(OUT, report);
  console.log(report);
  log(`wrote ${OUT}`);
}

await main();
