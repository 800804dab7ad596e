-- status_put.lua: cache the buyer-visible statuses of requests of one item
-- bucket, never moving one backwards (PENDING < UNPAID < PAID/CANCELLED/
-- REJECTED), so a slow writer cannot overwrite a newer state with an older
-- one; and tell the ingresses whose buyers wait on them (GET ...?wait=), in
-- the same call so the writers pay no extra round trip. One call stores a
-- whole batch's statuses of the bucket (a consumer batch, a reaper pass):
-- a script call per request was a fifth of an order's Redis calls. Each
-- stored status is announced alone, as the request id, a space and the
-- value stored, so a woken poll answers it without reading it back.
-- SPUBLISH on the bucket's shard channel: it carries the bucket's hash tag,
-- so in a Redis Cluster the message stays on the shard of the keys instead
-- of being broadcast to every node.
-- KEYS[i] status key of request i (all of one bucket)
-- ARGV[1] the bucket's status channel; then for request i, from
-- ARGV[2 + 4*(i-1)]: rank, JSON, ttl (ms), request id
-- Returns how many were stored (the others kept a newer value).
local stored = 0
for i, key in ipairs(KEYS) do
  local a = 2 + 4 * (i - 1)
  local rank = ARGV[a]
  local cur = redis.call("GET", key)
  local older = cur and tonumber(string.match(cur, "^(%d+)|"))
  if not (older and older > tonumber(rank)) then
    local v = rank .. "|" .. ARGV[a + 1]
    redis.call("SET", key, v, "PX", ARGV[a + 2])
    redis.call("SPUBLISH", ARGV[1], ARGV[a + 3] .. " " .. v)
    stored = stored + 1
  end
end
return stored
