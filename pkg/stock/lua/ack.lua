-- ack.lua: record that a keyed request's publish was acknowledged by Kafka,
-- on its Idempotency-Key answer, so that a replay (on any ingress replica,
-- after any crash) answers 202 only for a message that is durable.
-- KEYS[1] idempotency key   ARGV[1] request id
-- The answer is "<request id>[#<fingerprint>]" (admit.lua), ":a" appended
-- once acknowledged.
-- Returns 1 marked (or marked before), 0 the key no longer names this request.
local v = redis.call("GET", KEYS[1])
if not v then return 0 end
local answer, acked = string.match(v, "^([^:]*)(:?a?)$")
if not answer or string.match(answer, "^[^#]+") ~= ARGV[1] then return 0 end
if acked == ":a" then return 1 end
redis.call("SET", KEYS[1], answer .. ":a", "KEEPTTL")
return 1
