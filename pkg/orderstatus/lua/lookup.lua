-- lookup.lua: what Redis knows about one request, read in one call: its
-- cached status and its pending reservation. Both keys share the item's hash
-- slot, so the two reads are one consistent view (a script runs alone), and
-- a status poll costs one Redis call and no MySQL call while the request is
-- pending. A script rather than MULTI/EXEC so that polls can share a
-- pipeline with other calls (stock.Coalescer).
-- KEYS[1] status key   KEYS[2] reservations hash   ARGV[1] request id
-- Returns {status or false, reservation or false}.
return {redis.call("GET", KEYS[1]), redis.call("HGET", KEYS[2], ARGV[1])}
