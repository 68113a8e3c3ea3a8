// The load generator of `bun run bench`: autocannon (npm), run on Node as its own process
// so that it never shares an event loop with the server it measures.
//
//   node test/bench/load.mjs '<json options>'
//
// Options: { url (or several, autocannon giving them the connections in turn; one when
// paced), connections, seconds, requests: [{ method, path, headers, body }], idReplacement?
// (also in headers), paced? (requests per second), latenciesOut? }.
//
// With `paced`, autocannon is not used: its rate limit sends each second's quota in a burst
// at the start of the second, which measures queueing, not latency at that rate. Instead
// requests leave on an even schedule (1 ms timer ticks) over `connections` keep-alive
// sockets (node:net, one request at a time per socket), and each latency is counted from
// the write of the request to the end of its response. A request due while every socket is
// busy waits for one; the longest such wait is reported as queuedMax.
//
// Prints one JSON line: counts, statuses and latency percentiles in milliseconds, taken
// from every response (autocannon's own histogram has 1 ms resolution, too coarse for
// sub-millisecond latencies). With latenciesOut, the raw latencies (Float64, little-endian)
// are written there so runs can be merged.
import autocannon from "autocannon";
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import net from "node:net";

const opts = JSON.parse(process.argv[2]);

let latencies = new Float64Array(1 << 16);
let n = 0;
const statuses = {};

function record(statusCode, ms) {
  if (n === latencies.length) {
    const bigger = new Float64Array(latencies.length * 2);
    bigger.set(latencies);
    latencies = bigger;
  }
  latencies[n++] = ms;
  statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
}

function runPaced() {
  const target = new URL(opts.url);
  const interval = 1000 / opts.paced;
  const start = performance.now();
  const end = start + opts.seconds * 1000;
  const requests = opts.requests.map((r) => ({ ...r, head: `${r.method} ${r.path} HTTP/1.1\r\nhost: ${target.host}\r\n${Object.entries(r.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join("")}` }));
  const idle = [];
  const waiting = [];
  let sent = 0;
  let pending = 0;
  let errors = 0;
  let non2xx = 0;
  let finished = false;
  let queuedMax = 0;
  const finish = () => {
    if (finished || pending > 0 || performance.now() < end) return;
    finished = true;
    for (const c of idle) c.socket.destroy();
    done({ non2xx, errors, timeouts: 0, start: new Date(Date.now() - (performance.now() - start)), finish: new Date(), queuedMax });
  };
  // One request at a time per connection; a response is read by its content-length.
  const connect = () => {
    const c = { socket: net.connect(Number(target.port), target.hostname), buf: Buffer.alloc(0), sentAt: 0, busy: false, dead: false };
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
      record(status, performance.now() - c.sentAt);
      if (status < 200 || status > 299) non2xx++;
      pending--;
      c.busy = false;
      release(c);
    });
    // A connection that fails or is closed counts its request as an error and is replaced,
    // so that every request due is sent and answered or counted.
    const dead = () => {
      if (c.dead) return;
      c.dead = true;
      c.socket.destroy();
      if (c.busy) {
        errors++;
        pending--;
      }
      const i = idle.indexOf(c);
      if (i >= 0) idle.splice(i, 1);
      if (!finished) release(connect());
      finish();
    };
    c.socket.on("error", dead);
    c.socket.on("close", dead);
    return c;
  };
  for (let i = 0; i < opts.connections; i++) idle.push(connect());
  const send = (c, spec, due) => {
    const body = spec.body === undefined ? "" : opts.idReplacement ? spec.body.replaceAll("[<id>]", randomUUID()) : spec.body;
    c.busy = true;
    queuedMax = Math.max(queuedMax, performance.now() - due);
    c.sentAt = performance.now();
    c.socket.write(`${spec.head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  };
  const release = (c) => {
    const next = waiting.shift();
    if (next) send(c, next.spec, next.due);
    else {
      idle.push(c);
      finish();
    }
  };
  const tick = () => {
    const now = performance.now();
    while (start + sent * interval <= Math.min(now, end)) {
      const due = start + sent * interval;
      const spec = requests[sent % requests.length];
      sent++;
      pending++;
      const c = idle.pop();
      if (c) send(c, spec, due);
      else waiting.push({ spec, due });
    }
    if (now < end) setTimeout(tick, 1);
    else finish();
  };
  tick();
}

function runAutocannon() {
const instance = autocannon({
  url: opts.url,
  connections: opts.connections,
  duration: opts.seconds,
  requests: opts.requests,
  idReplacement: Boolean(opts.idReplacement),
  timeout: 10,
});

instance.on("response", (_client, statusCode, _bytes, responseTime) => record(statusCode, responseTime));
instance.on("done", done);
}

function done(result) {
  const sorted = latencies.slice(0, n).sort();
  const pct = (p) => (n === 0 ? NaN : sorted[Math.min(n - 1, Math.ceil((p / 100) * n) - 1)]);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const seconds = (new Date(result.finish).getTime() - new Date(result.start).getTime()) / 1000;
  if (opts.latenciesOut) writeFileSync(opts.latenciesOut, Buffer.from(sorted.buffer, sorted.byteOffset, n * 8));
  process.stdout.write(
    JSON.stringify({
      responses: n,
      seconds,
      rps: n / seconds,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statuses,
      p50: pct(50),
      p90: pct(90),
      p99: pct(99),
      max: n ? sorted[n - 1] : NaN,
      mean: n ? sum / n : NaN,
      cpuMs: (process.cpuUsage().user + process.cpuUsage().system) / 1000,
      queuedMax: result.queuedMax ?? 0,
    }) + "\n",
  );
}

if (opts.paced) runPaced();
else runAutocannon();
