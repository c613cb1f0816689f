-- KEYS: job, results, shard ledger, webhook, shard documents, answers.
-- ARGV: shard, failed, now, drop documents (0/1), then index/result pairs.
-- Returns {status after the call, 1 if this call made the job final, 1 if it wrote};
-- {"", 0, 0} when the job no longer exists. Results, ledger and answers expire with the job record (retention).
-- A shard already completed is written again only by a run with fewer failed documents
-- (a redelivery that classified what an earlier run gave up on); any other run leaves it
-- as it is, so a duplicate run answers nothing twice and a late give-up (fail_shard) never
-- overwrites results. Runs after open_event.lua (prepended at load).
if redis.call('EXISTS', KEYS[1]) == 0 then return {'', 0, 0} end
local shard, failed, now = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local before = redis.call('HGET', KEYS[3], shard)
if before and failed >= tonumber(before) then
  return {redis.call('HGET', KEYS[1], 'status'), 0, 0}
end
for i = 5, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('HINCRBY', KEYS[6], ARGV[i], 1)
end
if before then
  redis.call('HINCRBY', KEYS[1], 'documents_failed', failed - tonumber(before))
else
  redis.call('HINCRBY', KEYS[1], 'documents_done', (#ARGV - 4) / 2)
  redis.call('HINCRBY', KEYS[1], 'documents_failed', failed)
end
redis.call('HSET', KEYS[3], shard, failed)
if ARGV[4] == '1' then redis.call('DEL', KEYS[5]) end
local pttl = redis.call('PTTL', KEYS[1])
if pttl > 0 then
  redis.call('PEXPIRE', KEYS[2], pttl)
  redis.call('PEXPIRE', KEYS[3], pttl)
  redis.call('PEXPIRE', KEYS[6], pttl)
end
local status = redis.call('HGET', KEYS[1], 'status')
if (status == 'queued' or status == 'running')
   and redis.call('HLEN', KEYS[3]) >= tonumber(redis.call('HGET', KEYS[1], 'shards')) then
  local docs = tonumber(redis.call('HGET', KEYS[1], 'documents'))
  local nfailed = tonumber(redis.call('HGET', KEYS[1], 'documents_failed'))
  status = (nfailed >= docs) and 'failed' or 'succeeded'
  redis.call('HSET', KEYS[1], 'status', status, 'finished_at', now)
  if status == 'failed' then
    redis.call('HSET', KEYS[1], 'error', 'no document could be classified')
  end
  open_event(KEYS[4], status)
  return {status, 1, 1}
end
return {status, 0, 1}
