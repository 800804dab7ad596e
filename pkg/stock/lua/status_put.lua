-- status_put.lua: cache a request's buyer-visible status, never moving it
-- backwards (PENDING < UNPAID < PAID/CANCELLED/REJECTED), so a slow writer
-- cannot overwrite a newer state with an older one.
-- KEYS[1] status key   ARGV[1] rank   ARGV[2] JSON   ARGV[3] ttl (ms)
-- Returns 1 stored, 0 kept the newer value.
local cur = redis.call("GET", KEYS[1])
if cur then
  local rank = tonumber(string.match(cur, "^(%d+)|"))
  if rank and rank > tonumber(ARGV[1]) then return 0 end
end
redis.call("SET", KEYS[1], ARGV[1] .. "|" .. ARGV[2], "PX", ARGV[3])
return 1
