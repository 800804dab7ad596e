-- transfer_in.lua: give a transfer's qty to the recipient bucket, once
-- (pkg/rebalance), after MySQL moved it. The guard makes a repeat a no-op.
-- KEYS[1] the recipient's stock   KEYS[2] its in guard of this transfer
-- KEYS[3] its want flag (cleared once the stock covers the qty it asks
--         for: the demand it signalled is answered)
-- ARGV[1] qty   ARGV[2] the transfer's token (its MySQL created_at, ms)
-- The guard holds "<outcome>:<token>"; one with another token is an earlier
-- database's (see transfer_out.lua) and is overwritten. No TTL here.
-- Returns "ok" (given), "seen" (given before, or found no stock key before),
-- or "nostock" (no stock key: Redis lost the bucket; MySQL already holds the
-- qty there and a warm copies it; the guard is set all the same, so nothing
-- is given after that warm).
local g = redis.call("GET", KEYS[2])
if g then
  local _, token = string.match(g, "^(%a+):(%d+)$")
  if token == ARGV[2] then return "seen" end
end
local outcome = "nostock"
if redis.call("EXISTS", KEYS[1]) == 1 then
  local left = redis.call("INCRBY", KEYS[1], ARGV[1])
  if left >= tonumber(redis.call("GET", KEYS[3]) or "0") then redis.call("DEL", KEYS[3]) end
  outcome = "ok"
end
redis.call("SET", KEYS[2], outcome .. ":" .. ARGV[2])
return outcome
