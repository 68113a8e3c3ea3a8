-- POST /webhooks/loopback for `bun run bench` (test/bench/run.ts): the loopback network's
-- inbound webhook, each request its own phone and its own network id (so the deduplication
-- lookup finds nothing, as with a real network).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

function init(args)
  phone_args(args)
end
function request()
  local phone, n = next_phone()
  return wrk.format("POST", "/webhooks/loopback", auth_headers(true),
    '{"phone":"' .. phone .. '","message":"Hi! Is the store open tomorrow?","id":"bench-' .. n .. '"}')
end
