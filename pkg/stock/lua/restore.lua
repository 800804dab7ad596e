-- restore.lua: give a cancelled order's qty back to the Redis stock, once.
-- The guard key, named by the order id, makes a repeat a no-op (I5).
-- KEYS[1] stock   KEYS[2] restore guard of this order
-- ARGV[1] qty   ARGV[2] guard ttl (ms)
-- Returns 1 applied now, 0 applied before, -1 no stock key (Redis lost its
-- data: the item must be warmed from MySQL, which already holds the qty).
if redis.call("EXISTS", KEYS[1]) == 0 then return -1 end
if not redis.call("SET", KEYS[2], "1", "NX", "PX", ARGV[2]) then return 0 end
redis.call("INCRBY", KEYS[1], ARGV[1])
return 1
