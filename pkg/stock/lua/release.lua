-- release.lua: undo one reservation, at most once (the reservation is the guard).
-- Used when the arbiter decided against the request: ABORTED (publish failed),
-- VOIDED (orphan), REJECTED by the consumer.
-- KEYS[1] stock   KEYS[2] holders   KEYS[3] reservations   KEYS[4] idempotency key or any key of the item
-- KEYS[5] the bucket's meta   KEYS[6] the bucket's waitlist hash, KEYS[7]
--         its offers, KEYS[8] its claims (Keys.Waitlist)
-- ARGV[1] request id
-- ARGV[2] "1" to give the qty back to the Redis stock
-- ARGV[3] "1" to remove the buyer mark (only if it still names this request)
-- ARGV[4] "1" to delete KEYS[4] (the Idempotency-Key answer), so the buyer may retry
-- ARGV[5] a request id the buyer mark must name from now on ("" = leave it)
-- Returns 1 when this call released the reservation, 0 when it was gone already.
--
-- The waitlist (as restore.lua): what is given back while a queued item's
-- sale is open goes to the next ticket in line, not to whoever asks first.
-- Each bucket holds its own share: the pool of the bucket the reservation
-- was made in (pkg/rebalance moves pooled units between buckets for an
-- offer to a buyer of another). A claim of a waitlist offer (admit.lua
-- recorded its offer in KEYS[8]) is no longer claimed: its unit goes back to the buyer's
-- own offer while that offer's window lasts (a publish that failed leaves
-- the buyer a retry), else to the pool; any other reservation's qty goes to
-- the pool when the stock is gone. Once the sale is over a claim's unit goes
-- to the stock, counted as returned.
local r = redis.call("HGET", KEYS[3], ARGV[1])
if not r then return 0 end
local user, qty = string.match(r, "^([^:]+):([^:]+):")
redis.call("HDEL", KEYS[3], ARGV[1])
local wl = KEYS[6] ~= KEYS[1]
local offer = wl and redis.call("HGET", KEYS[8], ARGV[1])
if offer then redis.call("HDEL", KEYS[8], ARGV[1]) end
if ARGV[2] == "1" and redis.call("EXISTS", KEYS[1]) == 1 then
  local to = "stock"
  if wl then
    local m = redis.call("HMGET", KEYS[5], "queue", "start_ms", "end_ms")
    local t = redis.call("TIME")
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local open = m[1] == "1" and now >= tonumber(m[2]) and now < tonumber(m[3])
    if offer then
      redis.call("HINCRBY", KEYS[6], "claimed", -qty)
      local exp = tonumber(string.match(offer, ":(%d+)$"))
      if open and exp and now < exp and redis.call("HEXISTS", KEYS[7], user) == 0 then
        redis.call("HSET", KEYS[7], user, offer)
        to = "offer"
      elseif open then
        to = "pool"
      else
        redis.call("HINCRBY", KEYS[6], "returned", qty)
      end
    elseif open and tonumber(redis.call("GET", KEYS[1])) <= 0 then
      redis.call("HINCRBY", KEYS[6], "in", qty)
      to = "pool"
    end
    if to == "pool" then redis.call("HINCRBY", KEYS[6], "pool", qty) end
    if to ~= "stock" or offer then
      redis.call("HINCRBY", KEYS[6], "ver", 1)
      redis.call("PEXPIREAT", KEYS[6], tonumber(m[3]) + 86400000)
      redis.call("PEXPIREAT", KEYS[7], tonumber(m[3]) + 86400000)
    end
  end
  if to == "stock" then redis.call("INCRBY", KEYS[1], qty) end
end
if ARGV[3] == "1" and redis.call("HGET", KEYS[2], user) == ARGV[1] then
  redis.call("HDEL", KEYS[2], user)
end
if ARGV[4] == "1" then redis.call("DEL", KEYS[4]) end
if ARGV[5] and ARGV[5] ~= "" then redis.call("HSET", KEYS[2], user, ARGV[5]) end
return 1
