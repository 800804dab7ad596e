-- gate_advance.lua: move an item's serving position on by what its rate
-- allows since the last move (pkg/gate), in one step, by Redis' clock (the
-- one admit.lua and ticket_take.lua judge the sale by). Every key carries
-- the item's bucket 0 hash tag.
-- KEYS[1] the gate (hash: serving, last_ms)   KEYS[2] arrivals (the item's
-- ticket count)   KEYS[3] item meta (start_ms, end_ms)   KEYS[4] the
-- waitlist hash   KEYS[5] the waitlist's offers (both only read: they tell
-- the gate whether the waitlist has work, waitlist_offer.lua)
-- ARGV[1] the rate, admissions a second (>= 1)
-- ARGV[2] "1" to hold: the pipeline has as many of the item's orders in
--         flight as the gate allows (pkg/gate), so nothing moves and the
--         time held is not banked: admissions resume at the rate, never in
--         a burst, once orders are written
-- ARGV[3] how many tickets may be admitted at most: the last arrival of
--         the item's last closed round while a round of its shuffle window
--         is open (its tickets have no place in line yet), -1 for no bound
-- ARGV[4] optional: now, Unix ms, used instead of Redis' TIME (only a
--         test's clock passes it: waitroom.Store.WithClock)
-- Returns {serving, tickets, advanced, pool, offers, cursor}, or {"unknown"}
-- for an item not warmed. Before start_ms and from end_ms on nothing moves. The position never passes the
-- tickets taken, and time spent with every ticket admitted is not banked:
-- a late ticket waits its turn at the rate, never behind a burst of credit.
-- Time with no gate running is banked for a second at most.
-- Fractions carry over in last_ms, so a rate of 3 a second at 10 passes a
-- second admits 3 a second, not 0.
local meta = redis.call("HMGET", KEYS[3], "start_ms", "end_ms")
if not meta[1] then
  return {"unknown"}
end
local start, endms = tonumber(meta[1]), tonumber(meta[2])
local now = ARGV[4] and tonumber(ARGV[4])
if not now then
  local t = redis.call("TIME")
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local g = redis.call("HMGET", KEYS[1], "serving", "last_ms")
local serving = tonumber(g[1] or "0")
local tickets = tonumber(redis.call("GET", KEYS[2]) or "0")
local wl = redis.call("HMGET", KEYS[4], "pool", "cursor")
local pool, offers, cursor = wl[1] or "0", tostring(redis.call("HLEN", KEYS[5])), wl[2] or "0"
if now < start or now >= endms then
  return {tostring(serving), tostring(tickets), "0", pool, offers, cursor}
end
if ARGV[2] == "1" then
  redis.call("HSET", KEYS[1], "serving", serving, "last_ms", now)
  redis.call("PEXPIREAT", KEYS[1], endms + 86400000)
  return {tostring(serving), tostring(tickets), "0", pool, offers, cursor}
end
local rate = tonumber(ARGV[1])
-- The position stops at the bound as it does at the last ticket: time
-- spent there is not banked, so a round that closes is admitted at the
-- rate, not in a burst.
local limit = tickets
local cap = tonumber(ARGV[3])
if cap >= 0 and cap < limit then
  limit = cap
end
-- At most a second of credit: after a gap with no gate (every reaper
-- down) the queue resumes at the rate, not with a burst of the whole gap.
local last = math.max(tonumber(g[2] or "0"), start, now - 1000)
local n = math.floor((now - last) * rate / 1000)
local advanced = 0
if serving + n >= limit then
  advanced = math.max(limit - serving, 0)
  serving = math.max(serving, limit)
  last = now
else
  advanced = n
  serving = serving + n
  last = last + n * 1000 / rate
end
redis.call("HSET", KEYS[1], "serving", serving, "last_ms", string.format("%.3f", last))
redis.call("PEXPIREAT", KEYS[1], endms + 86400000)
return {tostring(serving), tostring(tickets), tostring(advanced), pool, offers, cursor}
