-- waitlist_in.lua: give a waitlist transfer's qty to the recipient bucket's
-- share of the item's waitlist (its pool), once (pkg/rebalance), after MySQL
-- moved it. The guard makes a repeat a no-op. As transfer_in.lua, with the
-- pool for the stock; the want flag is left alone (these units are the
-- waitlist's, not stock for the bucket's buyers).
-- KEYS[1] the recipient's waitlist hash (pool; moved_in counts what came in
--         by transfers)
-- KEYS[2] its in guard of this transfer
-- KEYS[3] its stock (only whether Redis still has the bucket)
-- KEYS[4] its meta (end_ms: the hash expires a day after the sale, as the
--         waitlist's other scripts make it)
-- ARGV[1] qty   ARGV[2] the transfer's token (its MySQL created_at, ms)
-- Returns "ok" (given), "seen" (given before, or found no stock key before),
-- or "nostock" (no stock key: Redis lost the bucket; MySQL already holds the
-- qty there and a warm copies it to the stock; the guard is set all the
-- same, so nothing is given after that warm).
local g = redis.call("GET", KEYS[2])
if g then
  local _, token = string.match(g, "^(%a+):(%d+)$")
  if token == ARGV[2] then return "seen" end
end
local outcome = "nostock"
if redis.call("EXISTS", KEYS[3]) == 1 then
  redis.call("HINCRBY", KEYS[1], "pool", ARGV[1])
  redis.call("HINCRBY", KEYS[1], "moved_in", ARGV[1])
  redis.call("HINCRBY", KEYS[1], "ver", 1)
  local endms = redis.call("HGET", KEYS[4], "end_ms")
  if endms then redis.call("PEXPIREAT", KEYS[1], tonumber(endms) + 86400000) end
  outcome = "ok"
end
redis.call("SET", KEYS[2], outcome .. ":" .. ARGV[2])
return outcome
