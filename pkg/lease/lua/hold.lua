-- hold.lua: take a lease (the rebalancer's, the waiting room gate's) for a
-- holder when nobody holds it, or extend it when that holder does, in one
-- step (pkg/lease, lease.go). A GET then a PEXPIRE from the client let a
-- lease expire and be taken between the two, and the old holder then
-- extended the new one's.
-- KEYS[1] the lease   ARGV[1] the holder   ARGV[2] the TTL, ms
-- Returns 1 when the holder holds the lease for the TTL from now, else 0.
local cur = redis.call("GET", KEYS[1])
if not cur then
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
  return 1
end
if cur == ARGV[1] then
  redis.call("PEXPIRE", KEYS[1], ARGV[2])
  return 1
end
return 0
