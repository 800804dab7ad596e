-- restore.lua: give a cancelled order's qty back to the Redis stock, once.
-- The guard key, named by the order's request id (unique across databases,
-- unlike the AUTO_INCREMENT order id, which a restored or reset MySQL hands
-- out again), makes a repeat a no-op (I5). The guard has no TTL here: it
-- must outlive the restore record in MySQL, which the reaper marks after
-- this script ran, and only then gives the guard a short TTL.
-- KEYS[1] stock   KEYS[2] restore guard of this request   KEYS[3] the
-- bucket's meta   KEYS[4] the bucket's waitlist hash (Keys.Waitlist)
-- ARGV[1] qty
-- Returns 1 applied now, 2 applied now and held for the waitlist, 0 applied
-- before, -1 no stock key (Redis lost its data: the item must be warmed from
-- MySQL, which already holds the qty; the guard is set all the same, so a
-- slow second reaper cannot give it back again after that warm).
--
-- The waitlist (issue 25): a unit of an item with a waiting room, released
-- while its sale is open and its bucket's stock is gone, is not given to
-- whoever asks first. It goes to the bucket's waitlist pool, which the gate
-- offers to the next ticket in line (waitlist_offer.lua; for a buyer of
-- another bucket, after pkg/rebalance moved it there). Anywhere else (stock
-- left, the sale not open, no queue) it goes back to the stock.
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("SET", KEYS[2], "1", "NX")
  return -1
end
if not redis.call("SET", KEYS[2], "1", "NX") then return 0 end
local m = redis.call("HMGET", KEYS[3], "queue", "start_ms", "end_ms")
if m[1] == "1" and tonumber(redis.call("GET", KEYS[1])) <= 0 then
  local t = redis.call("TIME")
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if now >= tonumber(m[2]) and now < tonumber(m[3]) then
    redis.call("HINCRBY", KEYS[4], "pool", ARGV[1])
    redis.call("HINCRBY", KEYS[4], "in", ARGV[1])
    redis.call("HINCRBY", KEYS[4], "ver", 1)
    redis.call("PEXPIREAT", KEYS[4], tonumber(m[3]) + 86400000)
    return 2
  end
end
redis.call("INCRBY", KEYS[1], ARGV[1])
return 1
