-- waitlist_offer.lua: one pass of the waitlist hand-off (pkg/waitroom gate_offers.go,
-- waitlist.go), run by the gate's lease holder, over one bucket's share of
-- the waitlist: an unbucketed item's one (bucket 0's), or one bucket's of a
-- bucketed item (gate_offers_buckets.go: the tickets given are then those of
-- the bucket's buyers). Every key carries the bucket's hash tag.
-- KEYS[1] the waitlist hash (pool: released units not on offer; cursor: the
--         serving position of the last ticket considered; in, offered,
--         claimed, lapsed, returned: counts of units; ver: bumped on every
--         change)
-- KEYS[2] offers (hash: user id -> "ticket:position:expires_ms")
-- KEYS[3] holders (the bucket's: user id -> request id)
-- KEYS[4] the bucket's meta   KEYS[5] its stock
-- ARGV[1] the claim window, ms
-- ARGV[2] "1" when the candidates below run to the end of the line
-- ARGV[3..] position, ticket, user id, ... in serving order: the tickets
--         after the cursor the caller read
-- Returns {pool, offers live, cursor, offered, lapsed, returned} (the last
-- three by this call), or {"unknown"} for an item not warmed.
--
-- A unit is in exactly one place: the pool, one offer, a reservation (a
-- claim, admit.lua), or back in the stock (returned). An offer holds one
-- unit for one buyer until it is claimed or its window ends; then it goes
-- back to the pool and on to the next ticket. A ticket is considered once
-- (the cursor only moves on), and one whose buyer holds the item (an order,
-- paid, unpaid or cancelled unpaid) or an offer is passed over.
local meta = redis.call("HMGET", KEYS[4], "end_ms")
if not meta[1] then
  return {"unknown"}
end
local endms = tonumber(meta[1])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local w = redis.call("HMGET", KEYS[1], "pool", "cursor")
local pool = tonumber(w[1] or "0")
local cursor = tonumber(w[2] or "0")
local offered, lapsed, returned = 0, 0, 0
local all = redis.call("HGETALL", KEYS[2])
for i = 1, #all, 2 do
  local exp = tonumber(string.match(all[i + 1], ":(%d+)$"))
  if now >= endms or not exp or exp <= now then
    redis.call("HDEL", KEYS[2], all[i])
    pool = pool + 1
    lapsed = lapsed + 1
  end
end
local considered = 0
if now < endms then
  local window = tonumber(ARGV[1])
  for i = 3, #ARGV, 3 do
    if pool <= 0 then break end
    local pos = tonumber(ARGV[i])
    if pos > cursor then
      local user = ARGV[i + 2]
      if redis.call("HEXISTS", KEYS[3], user) == 0 and redis.call("HEXISTS", KEYS[2], user) == 0 then
        redis.call("HSET", KEYS[2], user, ARGV[i + 1] .. ":" .. pos .. ":" .. (now + window))
        pool = pool - 1
        offered = offered + 1
      end
      cursor = pos
    end
    considered = i
  end
  -- Everyone in line was considered and units are left: they go back to
  -- the stock, where any admitted ticket may order them.
  if pool > 0 and ARGV[2] == "1" and considered >= #ARGV - 2 then
    returned = pool
  end
else
  returned = pool -- the sale is over: nothing is held for anyone
end
if returned > 0 then
  redis.call("INCRBY", KEYS[5], returned)
  pool = pool - returned
end
if offered + lapsed + returned > 0 then
  redis.call("HSET", KEYS[1], "pool", pool, "cursor", cursor)
  redis.call("HINCRBY", KEYS[1], "offered", offered)
  redis.call("HINCRBY", KEYS[1], "lapsed", lapsed)
  redis.call("HINCRBY", KEYS[1], "returned", returned)
  redis.call("HINCRBY", KEYS[1], "ver", 1)
  redis.call("PEXPIREAT", KEYS[1], endms + 86400000)
  redis.call("PEXPIREAT", KEYS[2], endms + 86400000)
elseif cursor ~= tonumber(w[2] or "0") then
  redis.call("HSET", KEYS[1], "cursor", cursor)
end
return {tostring(pool), tostring(redis.call("HLEN", KEYS[2])), tostring(cursor), tostring(offered), tostring(lapsed), tostring(returned)}
