-- KEYS: webhook. Redeliver: a finished delivery gets a new round (same event, same webhook
-- id, a fresh attempt budget, no chain yet). A pending one whose chain is neither mid-attempt
-- nor waiting for a retry that is still due (its message was lost, or never enqueued) loses
-- its chain, so a new one can take over the round; the old one, should it wake, is stale.
-- Returns {state before ("" when there is no webhook), 1 if the caller must dispatch}.
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'', 0} end
if state == 'delivered' or state == 'failed' or state == 'dead_lettered' then
  redis.call('HSET', KEYS[1], 'state', 'pending', 'round_attempts', 0)
  redis.call('HINCRBY', KEYS[1], 'round', 1)
  redis.call('HDEL', KEYS[1], 'token', 'busy_until', 'next_at', 'delivered_at',
             'dead_lettered_at')
  return {state, 1}
end
if state == 'pending' then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) + tonumber(t[2]) / 1e6
  local busy = tonumber(redis.call('HGET', KEYS[1], 'busy_until') or '0')
  local due = tonumber(redis.call('HGET', KEYS[1], 'next_at') or '0')
  if busy <= now and due <= now then
    redis.call('HDEL', KEYS[1], 'token', 'busy_until')
    return {state, 1}
  end
end
return {state, 0}
