-- KEYS: idempotency key, job. ARGV: claim value. Binds a claimed key to its created job:
-- from now on it expires with the job. 0 if the claim was lost (lease expired, key taken).
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
local bound = cjson.decode(ARGV[1])
bound['bound'] = true
local pttl = redis.call('PTTL', KEYS[2])
if pttl <= 0 then return 0 end
redis.call('SET', KEYS[1], cjson.encode(bound), 'PX', pttl)
return 1
