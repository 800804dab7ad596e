-- stock_change.lua: one bucket's part of a restock or withdraw, once.
-- The guard, named by the operation id, keeps the units this bucket's Redis
-- stock changed by (signed), so any repeat (a retried call, the reaper's
-- repair, two appliers at once) answers the same number and changes nothing.
-- A restock gives ARGV[1] units; a withdraw takes at most -ARGV[1], only
-- what the stock holds now (units nobody holds: reservations and orders are
-- already out of it), so it never cancels anything.
-- The guard has no TTL here: it must outlive the MySQL row, which is marked
-- APPLIED after this script ran; only then does it get a short TTL.
-- KEYS[1] stock   KEYS[2] the operation's guard in this bucket
-- ARGV[1] signed delta asked of this bucket
-- Returns {units changed now or before (signed), 1 if changed now}. With no
-- stock key (Redis lost the item, or it was never warmed) nothing changes
-- and the guard says 0: MySQL holds the truth and a warm copies it.
local done = redis.call("GET", KEYS[2])
if done then return {tonumber(done), 0} end
local d = tonumber(ARGV[1])
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("SET", KEYS[2], "0")
  return {0, 0}
end
if d < 0 then
  local have = tonumber(redis.call("GET", KEYS[1]))
  if have < 0 then have = 0 end
  d = -math.min(-d, have)
end
if d ~= 0 then redis.call("INCRBY", KEYS[1], d) end
redis.call("SET", KEYS[2], tostring(d))
return {d, 1}
