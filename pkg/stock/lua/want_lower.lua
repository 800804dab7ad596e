-- want_lower.lua: a waiting buyer keeps its bucket's want flag up, and no
-- higher than its own qty (pkg/admission/wake.go says why): set the flag to
-- qty for the want TTL when it is absent or asks for more; a flag asking
-- for qty or less is left as it is, TTL included, so waiting never
-- prolongs a flag forever.
-- KEYS[1] the bucket's want flag   ARGV[1] qty   ARGV[2] ttl (ms)
-- Returns 1 set, 0 left.
local v = tonumber(redis.call("GET", KEYS[1]))
if v == nil or tonumber(ARGV[1]) < v then
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
  return 1
end
return 0
