-- drop.lua: give a lease up if the holder still holds it (pkg/lease,
-- lease.go), in one step, so a holder whose lease expired and was taken
-- never deletes the new holder's.
-- KEYS[1] the lease   ARGV[1] the holder
-- Returns 1 when it was the holder's and is gone, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  return 1
end
return 0
