-- KEYS: job, webhook. ARGV: now. Cancels a job that is not final.
-- Returns {status after the call, 1 if this call cancelled it}; {"", 0} if the job is gone.
-- Runs after open_event.lua (prepended at load).
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return {'', 0} end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished_at', ARGV[1])
  open_event(KEYS[2], 'cancelled')
  return {'cancelled', 1}
end
return {status, 0}
