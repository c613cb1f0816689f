-- KEYS: idempotency key. ARGV: claim value. Deletes the key only if it still holds that
-- claim (same job and fingerprint), bound or not: never someone else's.
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local held, mine = cjson.decode(v), cjson.decode(ARGV[1])
if held['job'] == mine['job'] and held['fp'] == mine['fp'] then
  return redis.call('DEL', KEYS[1])
end
return 0
