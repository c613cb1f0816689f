-- KEYS: idempotency key, the job it names. ARGV: claim value. Deletes the key only if it
-- still holds that claim (same job and fingerprint), bound or not: never someone else's;
-- and only while that job does not exist. A job left behind by a failed upload (its
-- removal failed too: the store was unreachable) is enqueued by the sweeper, so its key
-- stays, and the client's retry is answered with that job instead of making a second
-- one (the fleet's master partition, 2026-12-05: both ran, the client saw one).
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local held, mine = cjson.decode(v), cjson.decode(ARGV[1])
if held['job'] == mine['job'] and held['fp'] == mine['fp'] then
  return redis.call('DEL', KEYS[1])
end
return 0
