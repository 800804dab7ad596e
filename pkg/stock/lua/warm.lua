-- warm.lua: (re)build one stock bucket's Redis state from a MySQL snapshot.
-- Refuses while reservations are pending, unless the stock key is gone
-- (Redis lost its data, so there is nothing pending to protect).
-- KEYS[1] stock  KEYS[2] meta  KEYS[3] holders (hash)  KEYS[4] reservations
-- KEYS[5] holder bitmap
-- KEYS[6] the bucket's waitlist hash, KEYS[7] its offers (Keys.Waitlist)
-- KEYS[8..] restore guards of orders whose restore MySQL holds but Redis has
--           not seen: the snapshot already counts them, so they must not be
--           applied again.
-- ARGV[1] stock  ARGV[2] start_ms  ARGV[3] end_ms  ARGV[4] limit
--           The guards get no TTL, since their records are unmarked (the
--           reaper gives a guard its TTL after marking the record).
-- ARGV[5] "1" = meta only (stock and buyers kept)
-- ARGV[6] the item's bucket count (every bucket's meta carries it)
-- ARGV[7] "1" when the item has a waiting room: admit.lua then requires a
--         checked admission grant (issue 25)
-- ARGV[8] n, the number of buyers whose home is this bucket; then n pairs
--         (user id, the request id of the order they hold); then n holder
--         bits, one per buyer
-- Returns {"ok", pending} or {"pending", n}.
local pending = redis.call("HLEN", KEYS[4])
if ARGV[5] ~= "1" and pending > 0 and redis.call("EXISTS", KEYS[1]) == 1 then
  return {"pending", tostring(pending)}
end
redis.call("HSET", KEYS[2], "start_ms", ARGV[2], "end_ms", ARGV[3], "limit", ARGV[4], "buckets", ARGV[6], "queue", ARGV[7])
if ARGV[5] == "1" then return {"ok", tostring(pending)} end
redis.call("SET", KEYS[1], ARGV[1])
redis.call("DEL", KEYS[3])
redis.call("DEL", KEYS[4])
redis.call("DEL", KEYS[5])
local n = tonumber(ARGV[8])
for i = 9, 8 + 2 * n, 1000 do
  local last = math.min(i + 999, 8 + 2 * n)
  redis.call("HSET", KEYS[3], unpack(ARGV, i, last))
end
for i = 9 + 2 * n, 8 + 3 * n do
  redis.call("SETBIT", KEYS[5], ARGV[i], 1)
end
for i = 8, #KEYS do
  redis.call("SET", KEYS[i], "1")
end
-- The units the waitlist held are in the snapshot's stock (MySQL never
-- held them apart): they are the stock's again, counted as returned (I9),
-- and their offers are gone. The units moved into and out of this bucket's
-- share (pkg/rebalance waitlist transfers, none open: a warm refuses while
-- one is) are folded into in, so every bucket balances on its own
-- (in = pool + offers + claimed + returned) and a bucket a re-bucketing
-- retires takes no transfer with it that another bucket still counts.
if KEYS[6] ~= KEYS[1] then
  local w = redis.call("HMGET", KEYS[6], "pool", "moved_in", "moved_out")
  local held = tonumber(w[1] or "0") + redis.call("HLEN", KEYS[7])
  local net = tonumber(w[2] or "0") - tonumber(w[3] or "0")
  if held > 0 or net ~= 0 or w[2] or w[3] then
    redis.call("HSET", KEYS[6], "pool", 0)
    redis.call("HINCRBY", KEYS[6], "returned", held)
    redis.call("HINCRBY", KEYS[6], "in", net)
    redis.call("HDEL", KEYS[6], "moved_in", "moved_out")
    redis.call("HINCRBY", KEYS[6], "ver", 1)
    redis.call("DEL", KEYS[7])
  end
end
return {"ok", "0"}
