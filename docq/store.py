"""The job store on Redis: job records, document shards, results and progress.

Writes that must not be torn (finishing a shard, starting or cancelling a job) are Lua
scripts, so progress counters stay exact when a shard runs twice after a redelivery:
results are keyed by document index (a re-run overwrites), and the counters are derived
from a per-shard ledger rather than incremented blindly.
"""

from __future__ import annotations

import json
import math
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from docq import keys
from docq.errors import NotFound, StoreUnavailable
from docq.jobs import JobRecord, JobStatus


@dataclass(frozen=True, slots=True)
class Document:
    """One uploaded document."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class ShardDocument:
    """A document inside a shard, with its position in the upload."""

    index: int
    id: str
    text: str


# KEYS: job, results, shard ledger. ARGV: shard, failed, now, ttl, then index/result pairs.
# Returns the job status after the write, or "" when the job no longer exists.
_COMPLETE_SHARD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return '' end
local shard, failed, now, ttl = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
for i = 5, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
local before = redis.call('HGET', KEYS[3], shard)
if before then
  redis.call('HINCRBY', KEYS[1], 'documents_failed', failed - tonumber(before))
else
  redis.call('HINCRBY', KEYS[1], 'documents_done', (#ARGV - 4) / 2)
  redis.call('HINCRBY', KEYS[1], 'documents_failed', failed)
end
redis.call('HSET', KEYS[3], shard, failed)
redis.call('EXPIRE', KEYS[2], ttl)
redis.call('EXPIRE', KEYS[3], ttl)
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
end
return status
"""

# KEYS: job. ARGV: now. queued -> running; returns the status after the call ("" if gone).
_MARK_RUNNING = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status == 'queued' then
  redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1])
  return 'running'
end
return status
"""

# KEYS: job. ARGV: now. Cancels a job that is not final; returns the status after the call.
_CANCEL = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return '' end
if status == 'queued' or status == 'running' then
  redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished_at', ARGV[1])
  return 'cancelled'
end
return status
"""


def _decode(h: Mapping[Any, Any]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in h.items()}


class JobStore:
    """Reads and writes jobs; one instance per process (it holds a connection pool)."""

    def __init__(self, client: redis.Redis, *, shard_size: int, ttl_s: int) -> None:
        self.r = client
        self.shard_size = shard_size
        self.ttl_s = ttl_s
        self._complete = client.register_script(_COMPLETE_SHARD)
        self._running = client.register_script(_MARK_RUNNING)
        self._cancel = client.register_script(_CANCEL)

    @classmethod
    def from_url(cls, url: str, *, shard_size: int, ttl_s: int) -> JobStore:
        client = redis.Redis.from_url(url, socket_timeout=30, health_check_interval=30)
        return cls(client, shard_size=shard_size, ttl_s=ttl_s)

    # --- creating -----------------------------------------------------------------
    def create_job(self, model: str, documents: Sequence[Document]) -> JobRecord:
        """Store the documents in compressed shards and the job record, in one transaction."""
        job_id = uuid.uuid4().hex
        n_shards = math.ceil(len(documents) / self.shard_size)
        now = time.time()
        record: dict[Any, Any] = {
            "id": job_id,
            "model": model,
            "status": JobStatus.QUEUED.value,
            "documents": len(documents),
            "shards": n_shards,
            "shard_size": self.shard_size,
            "documents_done": 0,
            "documents_failed": 0,
            "created_at": repr(now),
        }
        try:
            with self.r.pipeline(transaction=True) as p:
                for n in range(n_shards):
                    chunk = documents[n * self.shard_size : (n + 1) * self.shard_size]
                    body = json.dumps([[d.id, d.text] for d in chunk], ensure_ascii=False)
                    p.set(keys.shard(job_id, n), zlib.compress(body.encode(), 1), ex=self.ttl_s)
                p.hset(keys.job(job_id), mapping=record)
                p.expire(keys.job(job_id), self.ttl_s)
                p.execute()
        except redis.RedisError as exc:
            raise StoreUnavailable("job store unavailable", str(exc)) from exc
        return self.get_job(job_id)

    def delete_job(self, job_id: str, shards: int) -> None:
        """Remove a job that could not be enqueued, so that a failed upload leaves nothing."""
        self.r.delete(
            keys.job(job_id),
            keys.results(job_id),
            keys.shards_done(job_id),
            *(keys.shard(job_id, n) for n in range(shards)),
        )

    # --- reading ------------------------------------------------------------------
    def get_job(self, job_id: str) -> JobRecord:
        try:
            h = self.r.hgetall(keys.job(job_id))
        except redis.RedisError as exc:
            raise StoreUnavailable("job store unavailable", str(exc)) from exc
        if not h:
            raise NotFound(f"job {job_id!r} not found", {"job_id": job_id})
        return JobRecord.from_redis(_decode(h))

    def load_shard(self, job: JobRecord, n: int) -> list[ShardDocument]:
        """Shard n's documents, with their positions in the upload."""
        raw = self.r.get(keys.shard(job.id, n))
        if raw is None:
            raise NotFound(f"shard {n} of job {job.id!r} not found (expired?)")
        assert isinstance(raw, bytes)  # the client does not decode responses
        pairs = json.loads(zlib.decompress(raw))
        base = n * job.shard_size
        return [ShardDocument(base + i, doc_id, text) for i, (doc_id, text) in enumerate(pairs)]

    def results_page(
        self, job: JobRecord, cursor: int, limit: int
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Results from document `cursor` on, in upload order, and the next cursor.

        While the job runs the page stops at the first document without a result (the next
        cursor points there, so a client can poll from where it stopped); once the job is
        final, documents of skipped shards (cancelled jobs) are left out. The next cursor
        is None once every document has been passed.
        """
        end = min(cursor + limit, job.documents)
        if cursor >= end:
            return [], None
        values = self.r.hmget(keys.results(job.id), [str(i) for i in range(cursor, end)])
        data: list[dict[str, Any]] = []
        next_cursor: int | None = end
        for i, raw in zip(range(cursor, end), values, strict=True):
            if raw is None:
                if not job.status.final:
                    next_cursor = i
                    break
                continue
            data.append(json.loads(raw))
        if next_cursor is not None and next_cursor >= job.documents:
            next_cursor = None
        return data, next_cursor

    def iter_results(self, job: JobRecord, page: int = 1000) -> Iterator[dict[str, Any]]:
        """Every available result in upload order."""
        cursor: int | None = 0
        while cursor is not None:
            data, nxt = self.results_page(job, cursor, page)
            yield from data
            if nxt == cursor:  # the job is still running and the next result is not there
                return
            cursor = nxt

    # --- the worker's writes ------------------------------------------------------
    def mark_running(self, job_id: str) -> JobStatus | None:
        status = self._running(keys=[keys.job(job_id)], args=[repr(time.time())])
        return JobStatus(status.decode()) if status else None

    def complete_shard(
        self, job_id: str, n: int, results: Sequence[tuple[int, dict[str, Any]]]
    ) -> JobStatus | None:
        """Write a shard's results and progress atomically; returns the job's status after it.

        Safe to call twice for the same shard: results overwrite, counters do not double.
        """
        failed = sum(1 for _, r in results if "error" in r)
        args: list[Any] = [n, failed, repr(time.time()), self.ttl_s]
        for index, result in results:
            args += [index, json.dumps(result, ensure_ascii=False)]
        status = self._complete(
            keys=[keys.job(job_id), keys.results(job_id), keys.shards_done(job_id)], args=args
        )
        return JobStatus(status.decode()) if status else None

    def cancel(self, job_id: str) -> JobStatus:
        status = self._cancel(keys=[keys.job(job_id)], args=[repr(time.time())])
        if not status:
            raise NotFound(f"job {job_id!r} not found", {"job_id": job_id})
        return JobStatus(status.decode())

    def ping(self) -> bool:
        try:
            return bool(self.r.ping())
        except redis.RedisError:
            return False
