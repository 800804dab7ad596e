-- admit.lua: the admission decision, atomically, in one round trip.
-- KEYS[1] stock   KEYS[2] meta   KEYS[3] buyers   KEYS[4] reservations
-- KEYS[5] idempotency key (only read/written when ARGV[7] == "1")
-- KEYS[6] per-user rate window (only used when ARGV[5] > 0)
-- ARGV[1] user id   ARGV[2] qty   ARGV[3] request id   ARGV[4] unused (was the host's now)
-- ARGV[5] per-user limit per second (0 = off)   ARGV[6] idempotency ttl (ms)
-- ARGV[7] "1" when an Idempotency-Key was sent
-- Returns {code, detail}:
--   {"ok", stock_left}          admitted: stock taken, buyer marked, reserved
--   {"replay", request_id}      the Idempotency-Key was admitted before
--   {"unknown", ""}             item not warmed (or Redis lost its data)
--   {"not_active", ""}          outside the sale window
--   {"over_limit", limit}       qty above the per-user limit
--   {"rate_limited", retry_ms}  per-user window exceeded
--   {"already", ""}             this user already holds this item
--   {"sold_out", stock_left}    not enough stock left
local qty = tonumber(ARGV[2])
-- The sale window and the reservation's age are judged by Redis' own clock,
-- one clock for every ingress replica and for the reaper's orphan sweep, so
-- a skewed ingress host can neither open a sale early nor age a reservation.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if ARGV[7] == "1" then
  local prev = redis.call("GET", KEYS[5])
  if prev then return {"replay", prev} end
end
local meta = redis.call("HMGET", KEYS[2], "start_ms", "end_ms", "limit")
if not meta[1] then return {"unknown", ""} end
if now < tonumber(meta[1]) or now >= tonumber(meta[2]) then return {"not_active", ""} end
if qty > tonumber(meta[3]) then return {"over_limit", meta[3]} end
local rl = tonumber(ARGV[5])
if rl > 0 then
  local n = redis.call("INCR", KEYS[6])
  if n == 1 then redis.call("PEXPIRE", KEYS[6], 1000) end
  if n > rl then return {"rate_limited", tostring(redis.call("PTTL", KEYS[6]))} end
end
if redis.call("SISMEMBER", KEYS[3], ARGV[1]) == 1 then return {"already", ""} end
local stock = tonumber(redis.call("GET", KEYS[1]) or "0")
if stock < qty then return {"sold_out", tostring(stock)} end
local left = redis.call("DECRBY", KEYS[1], qty)
redis.call("SADD", KEYS[3], ARGV[1])
redis.call("HSET", KEYS[4], ARGV[3], ARGV[1] .. ":" .. ARGV[2] .. ":" .. tostring(now))
if ARGV[7] == "1" then
  redis.call("SET", KEYS[5], ARGV[3], "PX", ARGV[6])
end
return {"ok", tostring(left)}
