-- settle.lua: the consumer's after-commit step for ORDERED requests: the
-- reservations are now orders, so drop them (no stock moves: the stock stays
-- taken). Idempotent.
-- KEYS[1] reservations   ARGV request ids
-- Returns how many reservations were dropped.
if #ARGV == 0 then return 0 end
return redis.call("HDEL", KEYS[1], unpack(ARGV))
