-- ack.lua: record that a keyed request's publish was acknowledged by Kafka,
-- on its Idempotency-Key answer, so that a replay (on any ingress replica,
-- after any crash) answers 202 only for a message that is durable.
-- KEYS[1] idempotency key   ARGV[1] request id
-- Returns 1 marked (or marked before), 0 the key no longer names this request.
local v = redis.call("GET", KEYS[1])
if v == ARGV[1] .. ":a" then return 1 end
if v ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[1] .. ":a", "KEEPTTL")
return 1
