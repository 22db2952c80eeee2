-- seckill_cancel.lua -- cancel an order by number, idempotently: the first
-- cancel returns its units to stock, a second finds it in the cancelled
-- set and returns nothing.  The buyer keeps the quota (flash-sale policy).
-- KEYS[1] orders:<activity>  KEYS[2] cancelled:<activity>  KEYS[3] stock:<sku>
-- ARGV[1] order number
-- Returns the units returned (> 0), -5 NOT_FOUND or -23 CANCELLED.
local n = tonumber(ARGV[1])
if n < 1 then return -5 end
local e = redis.call('LINDEX', KEYS[1], n - 1)
if not e then return -5 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return -23 end
local qty = tonumber(string.match(e, ':(%d+)$'))
redis.call('INCRBY', KEYS[3], qty)
return qty
