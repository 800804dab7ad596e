-- waitlist_out.lua: take a waitlist transfer's qty out of the donor bucket's
-- share of the item's waitlist (its pool), once (pkg/rebalance, for the
-- waiting room's gate: a unit released in one bucket, offered to a buyer whose
-- home is another). The outcome is decided the first time and kept in the
-- guard, so every later run (a retry, a resume after a crash, a second driver)
-- answers the same and takes nothing. As transfer_out.lua, with the pool for
-- the stock.
-- KEYS[1] the donor's waitlist hash (pool; moved_out counts what left by
--         transfers, so the share balances on its own: I9)
-- KEYS[2] the donor's out guard of this transfer
-- KEYS[3] the donor's stock (only whether Redis still has the bucket)
-- ARGV[1] qty   ARGV[2] the transfer's token (its MySQL created_at, ms)
-- The guard holds "<outcome>:<token>" (see transfer_out.lua). No TTL here.
-- Returns "ok" (taken), "short" (the pool has less than qty: it was offered
-- meanwhile, or given back to the stock; nothing taken), or "nostock" (no
-- stock key: Redis lost the bucket; nothing taken).
local g = redis.call("GET", KEYS[2])
if g then
  local outcome, token = string.match(g, "^(%a+):(%d+)$")
  if token == ARGV[2] then return outcome end
end
local outcome = "short"
if redis.call("EXISTS", KEYS[3]) == 0 then
  outcome = "nostock"
elseif tonumber(redis.call("HGET", KEYS[1], "pool") or "0") >= tonumber(ARGV[1]) then
  redis.call("HINCRBY", KEYS[1], "pool", -tonumber(ARGV[1]))
  redis.call("HINCRBY", KEYS[1], "moved_out", ARGV[1])
  redis.call("HINCRBY", KEYS[1], "ver", 1)
  outcome = "ok"
end
redis.call("SET", KEYS[2], outcome .. ":" .. ARGV[2])
return outcome
