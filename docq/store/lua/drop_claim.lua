-- KEYS: a sorted set of work to recover. ARGV: member, the score its claim gave it.
-- Removes the member only if it still holds that score: a shard that took a new lease in
-- the meantime (its new run started) keeps it.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
