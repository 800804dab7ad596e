-- transfer_out.lua: take a transfer's qty out of the donor bucket, once
-- (pkg/rebalance). The outcome is decided the first time and kept in the
-- guard, so every later run (a retry, a resume after a crash, a second
-- replica driving the same transfer) answers the same and takes nothing.
-- KEYS[1] the donor's stock   KEYS[2] the donor's out guard of this transfer
-- ARGV[1] qty   ARGV[2] the transfer's token (its MySQL created_at, ms)
-- The guard holds "<outcome>:<token>". A guard with another token belongs
-- to an earlier database's transfer that had the same AUTO_INCREMENT id (a
-- MySQL restored without Redis) and is overwritten. It gets no TTL here: the
-- rebalancer gives it one once MySQL says the transfer is final.
-- Returns "ok" (taken), "short" (the donor has less than qty: nothing
-- taken), or "nostock" (no stock key: Redis lost the bucket; nothing taken,
-- a warm rebuilds it from MySQL).
local g = redis.call("GET", KEYS[2])
if g then
  local outcome, token = string.match(g, "^(%a+):(%d+)$")
  if token == ARGV[2] then return outcome end
end
local outcome = "short"
local s = redis.call("GET", KEYS[1])
if not s then
  outcome = "nostock"
elseif tonumber(s) >= tonumber(ARGV[1]) then
  redis.call("DECRBY", KEYS[1], ARGV[1])
  outcome = "ok"
end
redis.call("SET", KEYS[2], outcome .. ":" .. ARGV[2])
return outcome
