-- status_mark.lua: before a pay commits in MySQL, mark the request's cached
-- status "in doubt: ask the database", so that a PAID whose cache write
-- fails after the commit can never leave an older UNPAID to be served (the
-- marker outranks UNPAID, so a late UNPAID fill from a read made before the
-- commit cannot replace it either). A final status is kept (it cannot move
-- back in MySQL either), and a request whose reservation is pending is not
-- an order yet: neither is marked. The marker is announced like a stored
-- status, so a long poll woken by it reads again (from MySQL).
-- KEYS[1] status key   KEYS[2] reservations hash
-- ARGV[1] request id   ARGV[2] in-doubt rank   ARGV[3] final rank
-- ARGV[4] ttl (ms)     ARGV[5] the item's status channel
-- Returns "final", "pending" or "marked".
local cur = redis.call("GET", KEYS[1])
if cur then
  local rank = tonumber(string.match(cur, "^(%d+)|"))
  if rank and rank >= tonumber(ARGV[3]) then return "final" end
end
if redis.call("HEXISTS", KEYS[2], ARGV[1]) == 1 then return "pending" end
redis.call("SET", KEYS[1], ARGV[2] .. "|", "PX", ARGV[4])
redis.call("SPUBLISH", ARGV[5], ARGV[1])
return "marked"
