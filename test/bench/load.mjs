// The paced (fixed-rate) load generator of `bun run bench` (test/bench/run.ts), on Node as a
// process of its own. wrk drives the saturation runs; it cannot pace, so this sends a fixed
// number of requests per second instead (open loop: the schedule does not wait for answers).
//
//   node test/bench/load.mjs '<json options>'
//
// Options: { url, connections, seconds, rate (requests per second), base (first phone
// number of the run), requests: [{ method, path, headers, body }] }. In a body, "[<phone>]"
// becomes a phone no other request of the run uses ("+1" and 10 digits, as
// test/bench/wrk/common.lua makes them) and "[<n>]" that request's number.
//
// Request k is due at start + k / rate. While the next one is due within 2 ms the loop
// spins on setImmediate (answers are read between turns), else it sleeps on a timer, so
// requests leave within microseconds of their time, not in 1 ms bursts. Each goes out on a
// free keep-alive socket (node:net, one request at a time per socket; answers read by
// their content-length); one due while all `connections` are busy waits for the first
// free one. Latency is counted from the time the request was due, so waiting for a socket
// counts, as it would for a client (no coordinated omission). The generator's own
// lateness (due to the turn that sent it) is reported apart: `lagP99`, `lagMax`; the rate
// was kept when every due request was sent and lagP99 stays under 1 ms.
//
// Prints one JSON line: requests answered, seconds, rate offered and answered, latency
// p50/p90/p99/max in µs, errors (status: answers outside 2xx; socket: connections that
// failed or closed with a request outstanding), the generator's lag and its CPU (µs).
import net from "node:net";

const opts = JSON.parse(process.argv[2]);
const target = new URL(opts.url);
const interval = 1000 / opts.rate;
const specs = opts.requests.map((r) => ({
  head: `${r.method} ${r.path} HTTP/1.1\r\nhost: ${target.host}\r\n${Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("")}`,
  body: r.body,
}));

let latencies = new Float64Array(1 << 16);
let lags = new Float64Array(1 << 16);
let answered = 0;
let due = 0;
let sent = 0;
let statusErrors = 0;
let socketErrors = 0;
const grow = (a) => {
  const bigger = new Float64Array(a.length * 2);
  bigger.set(a);
  return bigger;
};

const start = performance.now() + 50; // connections open first
const end = start + opts.seconds * 1000;
const idle = [];
const waiting = [];
let finished = false;

function connect() {
  const c = { socket: net.connect(Number(target.port), target.hostname), buf: Buffer.alloc(0), dueAt: 0, busy: false, dead: false };
  c.socket.setNoDelay(true);
  c.socket.on("data", (chunk) => {
    c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
    const headEnd = c.buf.indexOf("\r\n\r\n");
    if (headEnd < 0) return;
    const head = c.buf.subarray(0, headEnd).toString("latin1");
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    if (c.buf.length < headEnd + 4 + length) return;
    c.buf = c.buf.subarray(headEnd + 4 + length);
    const status = Number(head.slice(9, 12));
    if (answered === latencies.length) latencies = grow(latencies);
    latencies[answered++] = performance.now() - c.dueAt;
    if (status < 200 || status > 299) statusErrors++;
    c.busy = false;
    release(c);
  });
  // A connection that fails or closes counts its request as an error and is replaced.
  const dead = () => {
    if (c.dead) return;
    c.dead = true;
    c.socket.destroy();
    if (c.busy) socketErrors++;
    const i = idle.indexOf(c);
    if (i >= 0) idle.splice(i, 1);
    if (!finished) release(connect());
    finish();
  };
  c.socket.on("error", dead);
  c.socket.on("close", dead);
  return c;
}

function send(c, k, dueAt) {
  const spec = specs[k % specs.length];
  const phone = `+1${2_000_000_000 + opts.base + k}`;
  const body = spec.body === undefined ? "" : spec.body.replaceAll("[<phone>]", phone).replaceAll("[<n>]", String(opts.base + k));
  c.busy = true;
  c.dueAt = dueAt;
  sent++;
  c.socket.write(`${spec.head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

function release(c) {
  const next = waiting.shift();
  if (next) send(c, next.k, next.dueAt);
  else {
    idle.push(c);
    finish();
  }
}

function finish() {
  if (finished || performance.now() < end || answered + socketErrors < sent || waiting.length) return;
  finished = true;
  for (const c of idle) c.socket.destroy();
  report();
}

function tick() {
  const now = performance.now();
  while (start + due * interval <= Math.min(now, end)) {
    const dueAt = start + due * interval;
    if (due === lags.length) lags = grow(lags);
    lags[due] = now - dueAt;
    const c = idle.pop();
    if (c) send(c, due, dueAt);
    else waiting.push({ k: due, dueAt });
    due++;
  }
  if (now >= end) return finish();
  const wait = start + due * interval - performance.now();
  if (wait > 2) setTimeout(tick, wait - 1.5);
  else setImmediate(tick);
}

function report() {
  const sorted = latencies.slice(0, answered).sort();
  const lagSorted = lags.slice(0, due).sort();
  const pct = (a, p) => (a.length === 0 ? NaN : a[Math.min(a.length - 1, Math.ceil((p / 100) * a.length) - 1)]);
  const us = (ms) => Math.round(ms * 1000);
  const cpu = process.cpuUsage();
  const seconds = opts.seconds;
  const scheduled = Math.floor(seconds * opts.rate);
  process.stdout.write(
    JSON.stringify({
      requests: answered,
      seconds,
      rate: opts.rate,
      rps: answered / seconds,
      p50: us(pct(sorted, 50)),
      p90: us(pct(sorted, 90)),
      p99: us(pct(sorted, 99)),
      max: us(sorted[answered - 1] ?? NaN),
      statusErrors,
      socketErrors,
      lagP99: us(pct(lagSorted, 99)),
      lagMax: us(lagSorted[due - 1] ?? NaN),
      keptRate: due >= scheduled * 0.99 && pct(lagSorted, 99) < 1,
      cpuUs: cpu.user + cpu.system,
    }) + "\n",
  );
  process.exit(0);
}

for (let i = 0; i < opts.connections; i++) idle.push(connect());
setTimeout(tick, start - performance.now());
// Answers still missing 10 s after the end count as errors.
setTimeout(() => {
  if (finished) return;
  socketErrors += sent - answered;
  finished = true;
  report();
}, end - performance.now() + 10_000).unref();
