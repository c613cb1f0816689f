-- KEYS: webhook. ARGV: token, lease (s). Claims the next delivery attempt for the chain
-- `token` (the first chain to claim a round adopts it; other chains are stale). Redis time
-- keeps the lease consistent across worker hosts. Returns {outcome, attempt number}:
-- "claimed", "busy" (another copy of the chain is mid-attempt; then the lease's remaining
-- seconds), "early" (the next attempt is not due yet; then the seconds until it is), "stale",
-- "gone", or the state when it is no longer pending.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'gone', '0'} end
if state ~= 'pending' then return {state, '0'} end
local token = redis.call('HGET', KEYS[1], 'token')
if not token then
  redis.call('HSET', KEYS[1], 'token', ARGV[1])
elseif token ~= ARGV[1] then
  return {'stale', '0'}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
local busy = tonumber(redis.call('HGET', KEYS[1], 'busy_until') or '0')
if busy > now then return {'busy', tostring(busy - now)} end
local due = tonumber(redis.call('HGET', KEYS[1], 'next_at') or '0')
if due > now then return {'early', tostring(due - now)} end
redis.call('HSET', KEYS[1], 'busy_until', tostring(now + tonumber(ARGV[2])))
redis.call('HINCRBY', KEYS[1], 'round_attempts', 1)
return {'claimed', tostring(redis.call('HINCRBY', KEYS[1], 'attempts', 1))}
