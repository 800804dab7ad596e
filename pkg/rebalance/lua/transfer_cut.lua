-- transfer_cut.lua: the Redis side of a transfer's MySQL step (pkg/store
-- MoveTransfer runs it while it holds the transfer's row and both bucket
-- rows locked), after the out step took the qty out of the donor.
-- Normally MySQL's donor has the qty and this only answers the qty (and
-- writes nothing). When MySQL's donor has less than the out step took
-- (Redis was above MySQL: a failover without WAIT lost writes MySQL has) the
-- transfer is cut to what MySQL has free, and the donor is reconciled
-- downward, once: it gets back the part of the qty that does not move, and
-- is then capped at what MySQL says it should hold. It never ends above
-- what it had before the out step.
-- A waitlist transfer (ARGV[5] "1") took its qty out of the donor's share
-- of the waitlist, not its stock: the part that does not move goes to the
-- donor's stock all the same, counted returned by the share (and no longer
-- moved out), so the share still balances (I9).
-- KEYS[1] the donor's stock   KEYS[2] its reservations
-- KEYS[3] its cut guard of this transfer
-- KEYS[4] its share of the waitlist (pool)   KEYS[5] that share's offers
-- ARGV[1] qty (what the out step took)
-- ARGV[2] free: MySQL's donor stock, less the restores MySQL holds and
--         Redis has not applied yet (read under the row's lock)
-- ARGV[3] "1" when MySQL's donor has less than qty
-- ARGV[4] the transfer's token (its MySQL created_at, ms)
-- ARGV[5] "1" for a waitlist transfer
-- The guard holds "<moved>:<before>:<after>:<token>", so a repeat (a resume
-- after the MySQL commit was lost) answers the decision made, whatever MySQL
-- says now; one with another token is an earlier database's (see
-- transfer_out.lua). No TTL here.
-- Returns {moved, before, after}: the qty MySQL is to move, and the donor's
-- stock before and after the cut (-1, -1 when nothing was cut; before -1
-- also when the donor has no stock key, where nothing moves).
-- Pending reservations are MySQL's stock that Redis already took: MySQL
-- must keep them, so they are not free; nor are the units the donor's share
-- of the waitlist still holds (its pool and live offers), which MySQL
-- counts as stock. One already written to MySQL and not
-- yet released counts twice, which errs low (a unit Redis does not sell,
-- that the audit shows and a warm gives back), never high.
local g = redis.call("GET", KEYS[3])
if g then
  local moved, before, after, token = string.match(g, "^(%-?%d+):(%-?%d+):(%-?%d+):(%d+)$")
  if token == ARGV[4] then return {tonumber(moved), tonumber(before), tonumber(after)} end
end
local qty = tonumber(ARGV[1])
if ARGV[3] ~= "1" then return {qty, -1, -1} end
local free = tonumber(ARGV[2])
local pending = 0
for _, v in ipairs(redis.call("HVALS", KEYS[2])) do
  pending = pending + tonumber(string.match(v, "^[^:]*:(%d+):") or "1")
end
pending = pending + tonumber(redis.call("HGET", KEYS[4], "pool") or "0") + redis.call("HLEN", KEYS[5])
local moved, before, after = 0, -1, -1
local s = redis.call("GET", KEYS[1])
if s then
  before = tonumber(s)
  moved = math.max(0, math.min(qty, free - pending))
  after = math.max(0, math.min(before + qty - moved, free - moved - pending))
  redis.call("SET", KEYS[1], after)
  if ARGV[5] == "1" and moved < qty then
    redis.call("HINCRBY", KEYS[4], "moved_out", moved - qty)
    redis.call("HINCRBY", KEYS[4], "returned", qty - moved)
    redis.call("HINCRBY", KEYS[4], "ver", 1)
  end
end
redis.call("SET", KEYS[3], moved .. ":" .. before .. ":" .. after .. ":" .. ARGV[4])
return {moved, before, after}
