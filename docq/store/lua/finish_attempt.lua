-- KEYS: webhook, attempts. ARGV: token, attempt JSON, state after it, now, retry delay (s).
-- Records an attempt of the chain `token`, the delivery state, and when the next attempt is
-- due; 0 if the chain is stale or the job expired (nothing is written then).
if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[2])
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then redis.call('PEXPIRE', KEYS[2], pttl) end
redis.call('HDEL', KEYS[1], 'busy_until')
redis.call('HSET', KEYS[1], 'state', ARGV[3])
if ARGV[3] == 'pending' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  redis.call('HSET', KEYS[1], 'next_at', tostring(now + tonumber(ARGV[5])))
end
if ARGV[3] == 'delivered' then redis.call('HSET', KEYS[1], 'delivered_at', ARGV[4]) end
if ARGV[3] == 'dead_lettered' then redis.call('HSET', KEYS[1], 'dead_lettered_at', ARGV[4]) end
return 1
