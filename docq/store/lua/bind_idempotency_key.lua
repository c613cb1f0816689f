-- KEYS: idempotency key, job. ARGV: claim value, time to live in ms for a job not yet
-- written (0: the job must exist). Binds a claimed key to its job: from now on it expires
-- with the job, at the same instant (PEXPIRETIME, Redis 7; a PTTL read and a SET PX a
-- moment later could outlive it by a millisecond), or after the given time, the job's
-- retention, when bound before the job is written. 0 if the claim was lost (lease
-- expired, key taken) or the job is gone.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
local bound = cjson.decode(ARGV[1])
bound['bound'] = true
local at = redis.call('PEXPIRETIME', KEYS[2])  -- -2: no job, -1: a job without expiry
if at > 0 then
  redis.call('SET', KEYS[1], cjson.encode(bound), 'PXAT', at)
  return 1
end
local ttl = tonumber(ARGV[2])
if ttl <= 0 then return 0 end
redis.call('SET', KEYS[1], cjson.encode(bound), 'PX', ttl)
return 1
