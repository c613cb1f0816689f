-- KEYS: idempotency key, job. ARGV: claim value, time to live in ms for a job not yet
-- written (0: the job must exist). Binds a claimed key to its job: from now on it expires
-- with the job (or after the given time, the job's retention, when bound before the job is
-- written). 0 if the claim was lost (lease expired, key taken) or the job is gone.
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
local bound = cjson.decode(ARGV[1])
bound['bound'] = true
local pttl = redis.call('PTTL', KEYS[2])
if pttl <= 0 then pttl = tonumber(ARGV[2]) end
if pttl <= 0 then return 0 end
redis.call('SET', KEYS[1], cjson.encode(bound), 'PX', pttl)
return 1
