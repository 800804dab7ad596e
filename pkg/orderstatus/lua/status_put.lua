-- status_put.lua: cache a request's buyer-visible status, never moving it
-- backwards (PENDING < UNPAID < PAID/CANCELLED/REJECTED), so a slow writer
-- cannot overwrite a newer state with an older one; and tell the ingresses
-- whose buyers wait on it (GET ...?wait=), in the same call so the writers
-- pay no extra round trip. The message is the request id, a space and the
-- value stored, so a woken poll answers it without reading it back. SPUBLISH on the item's shard channel: it carries
-- the item's hash tag, so in a Redis Cluster the message stays on the shard
-- of the key instead of being broadcast to every node.
-- KEYS[1] status key   ARGV[1] rank   ARGV[2] JSON   ARGV[3] ttl (ms)
-- ARGV[4] the item's status channel   ARGV[5] request id
-- Returns 1 stored, 0 kept the newer value.
local cur = redis.call("GET", KEYS[1])
if cur then
  local rank = tonumber(string.match(cur, "^(%d+)|"))
  if rank and rank > tonumber(ARGV[1]) then return 0 end
end
local v = ARGV[1] .. "|" .. ARGV[2]
redis.call("SET", KEYS[1], v, "PX", ARGV[3])
redis.call("SPUBLISH", ARGV[4], ARGV[5] .. " " .. v)
return 1
