-- seckill.lua -- one flash-sale order as one script: the Redis baseline the
-- bench measures flashstock against (the seeds' chain).
--   1. redeem the one-time token (GETDEL): it must exist and name this
--      buyer and sku, else BAD_TOKEN;
--   2. record the buyer in the activity's buyer set: already there -> LIMIT
--      (one order per user);
--   3. deduct only if enough stock is left, else take the buyer back out
--      (rollback) and return SOLD_OUT;
--   4. append the order record; its position is the order number.
-- KEYS[1] tok:<token>  KEYS[2] buyers:<activity>  KEYS[3] stock:<sku>
-- KEYS[4] orders:<activity>
-- ARGV[1] "<user>:<sku>" the token holds  ARGV[2] user  ARGV[3] qty
-- ARGV[4] sku
-- Returns the order number (> 0), -6 BAD_TOKEN, -2 LIMIT or -1 SOLD_OUT.
-- The line tagged stock-check is the conditional deduct; the bench's
-- --break-baseline (tests only) drops it to prove the check catches overselling.
local t = redis.call('GETDEL', KEYS[1])
if t ~= ARGV[1] then return -6 end
if redis.call('SADD', KEYS[2], ARGV[2]) == 0 then return -2 end
local qty = tonumber(ARGV[3])
local avail = tonumber(redis.call('GET', KEYS[3]) or '0')
if avail < qty then redis.call('SREM', KEYS[2], ARGV[2]) return -1 end -- stock-check
redis.call('DECRBY', KEYS[3], qty)
return redis.call('RPUSH', KEYS[4], ARGV[2] .. ':' .. ARGV[4] .. ':' .. ARGV[3])
