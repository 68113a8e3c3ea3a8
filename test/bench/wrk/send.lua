-- POST /api/send for `bun run bench` (test/bench/run.ts): each request its own phone;
-- with "idempotent" as the second argument, each its own Idempotency-Key too.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local idempotent = false
function init(args)
  phone_args(args)
  idempotent = args[2] == "idempotent"
end
function request()
  local phone, n = next_phone()
  local headers = auth_headers(true)
  if idempotent then headers["Idempotency-Key"] = "bench-" .. n end
  return wrk.format("POST", "/api/send", headers,
    '{"phone":"' .. phone .. '","message":"Your order #48213 has shipped and will arrive on Tuesday."}')
end
