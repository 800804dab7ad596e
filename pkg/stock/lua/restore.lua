-- restore.lua: give a cancelled order's qty back to the Redis stock, once.
-- The guard key, named by the order's request id (unique across databases,
-- unlike the AUTO_INCREMENT order id, which a restored or reset MySQL hands
-- out again), makes a repeat a no-op (I5). The guard has no TTL here: it
-- must outlive the restore record in MySQL, which the reaper marks after
-- this script ran, and only then gives the guard a short TTL.
-- KEYS[1] stock   KEYS[2] restore guard of this request
-- ARGV[1] qty
-- Returns 1 applied now, 0 applied before, -1 no stock key (Redis lost its
-- data: the item must be warmed from MySQL, which already holds the qty; the
-- guard is set all the same, so a slow second reaper cannot give it back
-- again after that warm).
if redis.call("EXISTS", KEYS[1]) == 0 then
  redis.call("SET", KEYS[2], "1", "NX")
  return -1
end
if not redis.call("SET", KEYS[2], "1", "NX") then return 0 end
redis.call("INCRBY", KEYS[1], ARGV[1])
return 1
