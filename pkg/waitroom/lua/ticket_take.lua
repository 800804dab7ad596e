-- ticket_take.lua: a buyer takes a ticket of an item's waiting room, once.
-- Every key carries the item's (bucket 0's) hash tag, so the script runs in
-- one Cluster slot.
-- KEYS[1] tickets by user (hash: user id -> "ticket:arrival:taken_ms")
-- KEYS[2] tickets by id   (hash: ticket id -> "user:arrival:taken_ms")
-- KEYS[3] arrivals        (string: the item's ticket count)
-- KEYS[4] item meta       (hash: start_ms, end_ms, ...)
-- ARGV[1] user id   ARGV[2] a fresh ticket id (crypto/rand, drawn by the
-- caller)   ARGV[3] queue_opens_at in Unix ms   ARGV[4] "1" when the caller
-- found the item sold out
-- Returns {"have", entry} for the buyer's existing ticket (whatever the
-- item's state now: a ticket is never taken back), {"new", entry},
-- {"not_open"}, {"ended"}, {"sold_out"} or {"unknown"} (the item is not warmed).
-- The arrival number and taken_ms come from one INCR and one TIME in one
-- script, so arrival order is taken_ms order: the tickets taken before
-- start_ms are exactly arrivals 1..k (pkg/waitroom's shuffled prefix).
local have = redis.call("HGET", KEYS[1], ARGV[1])
if have then
  return {"have", have}
end
local endms = redis.call("HGET", KEYS[4], "end_ms")
if not endms then
  return {"unknown"}
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if now < tonumber(ARGV[3]) then
  return {"not_open"}
end
if now >= tonumber(endms) then
  return {"ended"}
end
if ARGV[4] == "1" then
  return {"sold_out"}
end
local n = redis.call("INCR", KEYS[3])
local entry = ARGV[2] .. ":" .. n .. ":" .. now
redis.call("HSET", KEYS[1], ARGV[1], entry)
redis.call("HSET", KEYS[2], ARGV[2], ARGV[1] .. ":" .. n .. ":" .. now)
-- Kept a day past the sale's end, for the transcript and late polls.
local keep = tonumber(endms) + 86400000
for i = 1, 3 do
  redis.call("PEXPIREAT", KEYS[i], keep)
end
return {"new", entry}
