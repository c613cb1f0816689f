-- KEYS: job, shard, parts read, document ids.
-- ARGV: part (shard number), documents found, the shard's packed entries, then id/index pairs.
-- Writes a manifest job's part as read: its shard (in place of its reference, TTL kept),
-- its document count (parts read, the job's `documents` and `parts_read`), once per part.
-- Each id is claimed for its index first; returns {1} written, {0} read already (nothing
-- written), {-1} the job or the shard is gone, or {2, index...}: the indices whose id an
-- earlier document of the job holds; nothing is written then (the caller fails those
-- documents as duplicate_id and calls again without their ids). A claim is kept across
-- calls: a part read again claims the same ids for the same indices.
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return {0} end
local dups = {2}
for i = 4, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[i + 1]) == 0
     and redis.call('HGET', KEYS[4], ARGV[i]) ~= ARGV[i + 1] then
    table.insert(dups, tonumber(ARGV[i + 1]))
  end
end
if #dups > 1 then return dups end
if not redis.call('SET', KEYS[2], ARGV[3], 'XX', 'KEEPTTL') then return {-1} end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'documents', tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'parts_read', 1)
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[3], pttl)
  redis.call('PEXPIRE', KEYS[4], pttl)
end
return {1}
