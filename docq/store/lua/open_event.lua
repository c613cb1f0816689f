-- Shared by the scripts that make a job final: if the job has a webhook (KEYS[wh] exists),
-- open its one event, atomically with the transition, so that exactly one caller sees
-- "performed" and dispatches the delivery.
local function open_event(wh, status)
  if redis.call('EXISTS', wh) == 1 then
    redis.call('HSET', wh, 'event', 'job.' .. status, 'state', 'pending',
               'round', 1, 'round_attempts', 0)
  end
end
