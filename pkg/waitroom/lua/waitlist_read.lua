-- waitlist_read.lua: read one share of an item's waitlist in one step (pkg/waitroom
-- waitlist.go ReadWaitlist): a bucketed item has one share per bucket, each in
-- its bucket's slot, so the shares are read by one call each (pipelined), and a
-- share's pool and offers are never seen half moved.
-- KEYS[1] the share's waitlist hash   KEYS[2] its offers
-- ARGV    the hash's fields to read
-- Returns the fields' values (nil for a missing one), then the number of live
-- offers.
local out = redis.call("HMGET", KEYS[1], unpack(ARGV))
out[#ARGV + 1] = redis.call("HLEN", KEYS[2])
return out
