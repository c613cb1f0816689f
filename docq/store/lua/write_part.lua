-- KEYS: job, shard, parts read, document ids.
-- ARGV: part (shard number), documents found, the shard's packed entries, documents within
-- the job's cap (all but a too_many_documents one), the part's most documents (as planned
-- at creation), then id/index pairs.
-- Writes a manifest job's part as read: its shard (in place of its reference, TTL kept),
-- its document count (parts read, the job's `documents`, `documents_read` and
-- `parts_read`; its `unread_bound` less the part's most), once per part.
-- Returns {1} written, {0} read already (nothing written), {-1} the job or the shard is
-- gone, {3, room, cap}: the part's documents would take the job past its `max_documents`,
-- only `room` more fit (nothing written: the caller keeps the first `room` and fails the
-- rest as one too_many_documents document), or {2, index...}: the indices whose id an
-- earlier document of the job holds; nothing is written then (the caller fails those
-- documents as duplicate_id and calls again without their ids). Each id is claimed for its
-- index; a claim is kept across calls: a part read again claims the same ids for the same
-- indices.
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 then return {0} end
local cap = tonumber(redis.call('HGET', KEYS[1], 'max_documents') or '0')
local read = tonumber(redis.call('HGET', KEYS[1], 'documents_read') or '0')
if cap > 0 and read + tonumber(ARGV[4]) > cap then
  return {3, math.max(0, cap - read), cap}
end
local dups = {2}
for i = 6, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[i + 1]) == 0
     and redis.call('HGET', KEYS[4], ARGV[i]) ~= ARGV[i + 1] then
    table.insert(dups, tonumber(ARGV[i + 1]))
  end
end
if #dups > 1 then return dups end
if not redis.call('SET', KEYS[2], ARGV[3], 'XX', 'KEEPTTL') then return {-1} end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[1], 'documents', tonumber(ARGV[2]))
redis.call('HINCRBY', KEYS[1], 'documents_read', tonumber(ARGV[4]))
redis.call('HINCRBY', KEYS[1], 'unread_bound', -tonumber(ARGV[5]))
redis.call('HINCRBY', KEYS[1], 'parts_read', 1)
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[3], pttl)
  redis.call('PEXPIRE', KEYS[4], pttl)
end
return {1}
