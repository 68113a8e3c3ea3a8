-- GET routes of `bun run bench` (test/bench/run.ts): the paths after the block argument, in turn.
--   BENCH_AUTH="Bearer …" wrk -t1 -c32 -d5s -s test/bench/wrk/get.lua http://127.0.0.1:3000 -- 0 /api/messages/poll?limit=100
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local requests, i = {}, 0
function init(args)
  phone_args(args)
  for k = 2, #args do requests[#requests + 1] = wrk.format("GET", args[k], auth_headers(false)) end
end
function request()
  i = i % #requests + 1
  return requests[i]
end
