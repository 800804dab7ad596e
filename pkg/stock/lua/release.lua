-- release.lua: undo one reservation, at most once (the reservation is the guard).
-- Used when the arbiter decided against the request: ABORTED (publish failed),
-- VOIDED (orphan), REJECTED by the consumer.
-- KEYS[1] stock   KEYS[2] holders   KEYS[3] reservations   KEYS[4] idempotency key or any key of the item
-- ARGV[1] request id
-- ARGV[2] "1" to give the qty back to the Redis stock
-- ARGV[3] "1" to remove the buyer mark (only if it still names this request)
-- ARGV[4] "1" to delete KEYS[4] (the Idempotency-Key answer), so the buyer may retry
-- ARGV[5] a request id the buyer mark must name from now on ("" = leave it)
-- Returns 1 when this call released the reservation, 0 when it was gone already.
local r = redis.call("HGET", KEYS[3], ARGV[1])
if not r then return 0 end
local user, qty = string.match(r, "^([^:]+):([^:]+):")
redis.call("HDEL", KEYS[3], ARGV[1])
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
  redis.call("INCRBY", KEYS[1], qty)
end
if ARGV[3] == "1" and redis.call("HGET", KEYS[2], user) == ARGV[1] then
  redis.call("HDEL", KEYS[2], user)
end
if ARGV[4] == "1" then redis.call("DEL", KEYS[4]) end
if ARGV[5] and ARGV[5] ~= "" then redis.call("HSET", KEYS[2], user, ARGV[5]) end
return 1
