-- admit.lua: the admission decision, atomically, in one round trip.
-- KEYS[1] stock   KEYS[2] meta   KEYS[3] holders (hash user id -> request id)
-- KEYS[4] reservations
-- KEYS[5] idempotency key (only read/written when ARGV[7] == "1")
-- KEYS[6] per-user rate window (only used when ARGV[5] > 0)
-- KEYS[7] holder bitmap (a bit per hash of a holder's user id)
-- KEYS[8] the bucket's want flag (set when it is found short, to the qty
--         asked for, so the rebalancer can gather that much)
-- ARGV[1] user id   ARGV[2] qty   ARGV[3] request id
-- ARGV[4] deadline, unix ms by the ingress host's clock (0 = none): past it
--         the caller has given up waiting for this reply

-- ARGV[5] per-user limit per second (0 = off)   ARGV[6] idempotency ttl (ms)
-- ARGV[7] "1" when an Idempotency-Key was sent   ARGV[8] the user's holder bit
-- ARGV[9] the item's bucket count as the caller knows it
-- ARGV[10] the want flag's TTL (ms)
-- KEYS[9] the bucket's waitlist offers, KEYS[10] its waitlist hash,
--         KEYS[11] its claims (Keys.Offers; any key of the bucket when
--         ARGV[11] is not "2")
-- ARGV[12] the request's fingerprint with an Idempotency-Key ("" = none):
--          stored beside the key's request id ("<rid>#<fingerprint>"), and
--          a stored one that differs answers key_reused
-- ARGV[11] "1" when the ingress checked the buyer's admission grant for this
--          item (pkg/grant): required when the item's meta says queue "1";
--          "2" when it checked a waitlist offer's grant: the order claims the
--          unit the buyer's offer holds, not one of the stock
-- All keys are one stock bucket's: the buyer's home bucket.
-- Returns {code, detail}:
--   {"ok", stock_left}          admitted: stock taken, buyer marked, reserved
--                               (also when this very request id was admitted
--                               before: a client retry after a lost reply)
--   {"late", ""}                arrived after its deadline: nothing done
--   {"replay", request_id}      the Idempotency-Key's first request was
--                               published (acknowledged by Kafka)
--   {"replay_unacked", request_id}  the Idempotency-Key's first request is
--                               reserved but its publish was never confirmed
--   {"key_reused", request_id}  the Idempotency-Key was first sent with
--                               another request (ARGV[12] differs): nothing
--                               done
--   {"unknown", ""}             item not warmed (or Redis lost its data)
--   {"not_active", ""}          outside the sale window
--   {"need_grant", ""}          the item has a waiting room and no checked
--                               grant came with the request: nothing done
--   {"no_offer", ""}            a claim (ARGV[11] "2") of an offer the buyer
--                               does not hold (claimed, lapsed, never made)
--   {"over_limit", limit}       qty above the per-user limit
--   {"rate_limited", retry_ms}  per-user window exceeded
--   {"already", request_id}     this user holds this item, by request_id
--   {"moved", buckets}          the item has another bucket count than
--                               ARGV[9] (re-bucketed): nothing done
--   {"sold_out", stock_left}    not enough stock left in this bucket (with
--                               more buckets, the caller asks the others)
--
-- Idempotent per request id: running it twice with the same ARGV[3] (go-redis
-- resends a command after a read timeout) answers "ok" both times and takes
-- stock once.
local qty = tonumber(ARGV[2])
local rid = ARGV[3]
-- The sale window and the reservation's age are judged by Redis' own clock,
-- one clock for every ingress replica and for the reaper's orphan sweep, so
-- a skewed ingress host can neither open a sale early nor age a reservation.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call("HGET", KEYS[3], ARGV[1])
if held == rid then
  if redis.call("HEXISTS", KEYS[4], rid) == 1 then
    return {"ok", tostring(redis.call("GET", KEYS[1]) or "0")}
  end
  return {"replay", rid}
end
-- A copy of the command that reaches Redis after the caller gave up (a
-- client retry, bytes left in a dead connection's buffer) must not reserve:
-- the caller has already decided the request ABORTED and released whatever
-- it could see. NTP keeps the two clocks far closer than the store timeout.
local deadline = tonumber(ARGV[4])
if deadline > 0 and now > deadline then return {"late", ""} end
if ARGV[7] == "1" then
  local prev = redis.call("GET", KEYS[5])
  if prev then
    -- "<request id>#<fingerprint>" ("<request id>" alone when it was stored
    -- without one) until the publish was acknowledged, then with ":a"
    -- appended (ack.lua).
    local first, fp, acked = string.match(prev, "^([^#:]+)#?([^:]*)(:?a?)$")
    if first and fp ~= "" and ARGV[12] ~= "" and fp ~= ARGV[12] then return {"key_reused", first} end
    if acked == ":a" then return {"replay", first} end
    return {"replay_unacked", first or prev}
  end
end
local meta = redis.call("HMGET", KEYS[2], "start_ms", "end_ms", "limit", "buckets", "queue")
local buckets = tonumber(meta[4] or "1")
if buckets ~= tonumber(ARGV[9]) then return {"moved", tostring(buckets)} end
if not meta[1] then return {"unknown", ""} end
if now < tonumber(meta[1]) or now >= tonumber(meta[2]) then return {"not_active", ""} end
if meta[5] == "1" and ARGV[11] == "0" then return {"need_grant", ""} end
if qty > tonumber(meta[3]) then return {"over_limit", meta[3]} end
local rl = tonumber(ARGV[5])
if rl > 0 then
  local n = redis.call("INCR", KEYS[6])
  if n == 1 then redis.call("PEXPIRE", KEYS[6], 1000) end
  if n > rl then return {"rate_limited", tostring(redis.call("PTTL", KEYS[6]))} end
end
if held then return {"already", held} end
local claim = ARGV[11] == "2"
if claim then
  -- The unit is the one the buyer's offer holds (waitlist_offer.lua): it
  -- leaves the offer for this reservation, so it is claimed once.
  local o = redis.call("HGET", KEYS[9], ARGV[1])
  local exp = o and tonumber(string.match(o, ":(%d+)$"))
  if not exp or now >= exp then return {"no_offer", ""} end
  if qty ~= 1 then return {"over_limit", "1"} end
  redis.call("HDEL", KEYS[9], ARGV[1])
  redis.call("HINCRBY", KEYS[10], "claimed", 1)
  redis.call("HINCRBY", KEYS[10], "ver", 1)
  -- Kept so that release.lua, if this order is not taken, gives the unit
  -- back to the offer (or the pool) instead of the stock.
  redis.call("HSET", KEYS[11], rid, o)
  redis.call("PEXPIREAT", KEYS[11], tonumber(meta[2]) + 86400000)
end
local stock = tonumber(redis.call("GET", KEYS[1]) or "0")
if not claim and stock < qty then
  if buckets > 1 then redis.call("SET", KEYS[8], ARGV[2], "PX", ARGV[10]) end
  return {"sold_out", tostring(stock)}
end
local left = stock
if not claim then left = redis.call("DECRBY", KEYS[1], qty) end
redis.call("HSET", KEYS[3], ARGV[1], rid)
redis.call("SETBIT", KEYS[7], ARGV[8], 1)
redis.call("HSET", KEYS[4], rid, ARGV[1] .. ":" .. ARGV[2] .. ":" .. tostring(now))
if ARGV[7] == "1" then
  local answer = rid
  if ARGV[12] ~= "" then answer = rid .. "#" .. ARGV[12] end
  redis.call("SET", KEYS[5], answer, "PX", ARGV[6])
end
return {"ok", tostring(left)}
