-- KEYS: job. ARGV: now. queued -> running; returns the status after the call ("" if gone).
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1])
  return 'running'
end
return status
