-- KEYS: a sorted set of work to recover (leases, unenqueued jobs). ARGV: due (score at or
-- below which an entry is due), the score a claimed entry gets, the most to claim.
-- Returns the claimed members. A claim moves the entry's score forward instead of removing
-- it, so that when the sweeper dies before it re-enqueued the work, the entry comes due
-- again; drop_claim.lua removes it once the work is enqueued.
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], ARGV[2], member) end
return due
