-- waitlist_line.lua: move the gate's place in a bucketed item's line on
-- (pkg/waitroom gate_offers_buckets.go): the serving position up to which every
-- ticket was considered for an offer in its buyer's home bucket. It only moves
-- on, so two gate holders at once, or a pass that read an older place, never
-- move it back. Each bucket's own cursor (waitlist_offer.lua) is what keeps a
-- ticket from being considered twice; this is where the next pass starts.
-- KEYS[1] bucket 0's waitlist hash   KEYS[2] bucket 0's meta (end_ms: the
-- hash expires a day after the sale, as the waitlist's scripts make it)
-- ARGV[1] the position reached
-- Returns the place after the call.
local cur = tonumber(redis.call("HGET", KEYS[1], "line") or "0")
local to = tonumber(ARGV[1])
if to > cur then
  redis.call("HSET", KEYS[1], "line", to)
  local endms = redis.call("HGET", KEYS[2], "end_ms")
  if endms then redis.call("PEXPIREAT", KEYS[1], tonumber(endms) + 86400000) end
  cur = to
end
return cur
