-- retire.lua: empty one bucket of an item's old layout before the buckets
-- of a new bucket count are written (pkg/stock RetireLayout), so no bucket
-- of the old layout sells while buckets of the new one do. Refuses while
-- the bucket has pending reservations: their units are MySQL's, on their
-- way there, and would be stranded in a bucket nobody looks at any more.
-- KEYS[1] stock  KEYS[2] meta  KEYS[3] holders  KEYS[4] holder bitmap
-- KEYS[5] want flag  KEYS[6] reservations
-- ARGV[1] the item's new bucket count (the meta keeps only that, so
--         admit.lua answers "moved" to a caller of the old count, and
--         "unknown" to one of the new count until the warm writes it)
-- Returns {"ok", "0"} or {"pending", n}.
local pending = redis.call("HLEN", KEYS[6])
if pending > 0 then return {"pending", tostring(pending)} end
redis.call("DEL", KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
redis.call("HSET", KEYS[2], "buckets", ARGV[1])
return {"ok", "0"}
