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
-- The call is also the order writer's settle: the requests marked to
-- settle lose their reservations in the same step, so a poll finds an
-- order's reservation or its status, never both and never neither
-- (settling one round trip before caching sent the polls in between to
-- MySQL). A request whose newer status was kept is settled all the same.
-- KEYS[i] status key of request i (all of one bucket); KEYS[n + 1], when a
-- request is to settle, the bucket's reservations hash
-- ARGV[1] the bucket's status channel; then for request i, from
-- ARGV[2 + 5*(i-1)]: rank, JSON, ttl (ms), request id, "1" to settle it
-- Returns how many were stored (the others kept a newer value).
local n = (#ARGV - 1) / 5
local stored = 0
local settle = {}
for i = 1, n do
  local key = KEYS[i]
  local a = 2 + 5 * (i - 1)
  local rank = ARGV[a]
  if ARGV[a + 4] == "1" then settle[#settle + 1] = ARGV[a + 3] end
  local cur = redis.call("GET", key)
  local older = cur and tonumber(string.match(cur, "^(%d+)|"))
  if not (older and older > tonumber(rank)) then
    local v = rank .. "|" .. ARGV[a + 1]
    redis.call("SET", key, v, "PX", ARGV[a + 2])
    redis.call("SPUBLISH", ARGV[1], ARGV[a + 3] .. " " .. v)
    stored = stored + 1
  end
end
if #settle > 0 then
  redis.call("HDEL", KEYS[n + 1], unpack(settle))
end
return stored
