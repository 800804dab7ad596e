-- settle.lua: ORDERED requests' reservations are now orders, so drop them
-- (no stock moves: the stock stays taken). Idempotent. The reaper settles
-- so an ORDERED request whose consumer died before its Redis step; the
-- consumer's after-commit settles in pkg/orderstatus's status_put.lua, in
-- the call that caches the orders' statuses.
-- KEYS[1] reservations   ARGV request ids
-- Returns how many reservations were dropped.
if #ARGV == 0 then return 0 end
return redis.call("HDEL", KEYS[1], unpack(ARGV))
