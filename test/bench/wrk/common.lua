-- Shared by the wrk scripts of `bun run bench` (test/bench/run.ts): unique phones and the
-- one JSON line of results. Loaded with dofile by get.lua, send.lua and loopback.lua.

-- Several servers (the clock part of the run): BENCH_WRK_ADDRS="127.0.0.1:1234,127.0.0.1:1235"
-- gives wrk's threads the addresses in turn (one thread per server).
local addrs = {}
for hostport in string.gmatch(os.getenv("BENCH_WRK_ADDRS") or "", "[^,]+") do
  local host, port = hostport:match("^(.*):(%d+)$")
  addrs[#addrs + 1] = { host = host, port = port }
end
local threads = 0
function setup(thread)
  if #addrs > 0 then
    local a = addrs[threads % #addrs + 1]
    thread.addr = wrk.lookup(a.host, a.port)[1]
  end
  thread:set("id", threads)
  threads = threads + 1
end

-- A phone no other request of the run uses: "+1" and 10 digits from 2000000000 on
-- (test/bench/run.ts gives each run its own block through the first script argument;
-- each thread counts in its own stride). Possible numbers in libphonenumber's sense.
local base, counter, stride = 0, 0, 1
function phone_args(args)
  base = tonumber(args[1]) or 0
  counter = id or 0
  stride = tonumber(os.getenv("BENCH_WRK_THREADS") or "1")
end
function next_phone()
  local n = base + counter
  counter = counter + stride
  return string.format("+1%d", 2000000000 + n), n
end

local auth = os.getenv("BENCH_AUTH")
function auth_headers(json)
  local h = { ["Authorization"] = auth }
  if json then h["Content-Type"] = "application/json" end
  return h
end

-- One JSON line: latency percentiles in µs (wrk records every response, 1 µs resolution),
-- requests, duration (µs), bytes and errors (status: answers >= 400; connect, read,
-- write: socket errors; timeout).
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f,' ..
    '"status_errors":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean,
    e.status, e.connect, e.read, e.write, e.timeout))
end
