"""Jobs, their document shards, results and progress, on Redis.

Writes that must not be torn (finishing a shard, starting or cancelling a job) are Lua
scripts (lua/), so progress counters stay exact when a shard runs twice after a
redelivery: results are keyed by document index (a re-run overwrites), and the counters are
derived from a per-shard ledger rather than incremented blindly.

The write that makes a job final (the last shard, or a cancel) also opens the job's one
webhook event and tells its caller that it was the one, so exactly one caller dispatches
the delivery (deliveries.py). Every key of a job expires with its record (retention).
Every Redis failure raises StoreUnavailable (connection.py).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from docq import keys
from docq.blobs import BlobStore
from docq.errors import NotFound, StoreUnavailable
from docq.jobs import JobRecord, JobStatus
from docq.store import connection
from docq.store.codec import (
    ShardDocument,
    decode,
    shard_document,
    unpack_shard,
)
from docq.store.creating import Creating
from docq.store.deliveries import Deliveries
from docq.store.files import Files
from docq.store.idempotency import IdempotencyKeys
from docq.store.recovery import Recovery

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Transition:
    """A job's status after a write, whether this very call made the job final, and
    whether it wrote anything (a completed shard is not written again by a run that
    failed as many documents or more)."""

    status: JobStatus | None  # None when the job no longer exists
    performed: bool
    written: bool = True


def _transition(reply: list[bytes]) -> Transition:
    status, performed, *written = reply
    return Transition(
        JobStatus(status.decode()) if status else None,
        int(performed) == 1,
        not written or int(written[0]) == 1,
    )


class JobStore(Creating):
    """Reads and writes jobs; one instance per process (it holds a connection pool).

    Jobs are written by `Creating` (creating.py). `deliveries` (webhook delivery state),
    `idempotency` (Idempotency-Keys), `recovery` (shard leases, jobs not yet enqueued,
    audits: the sweeper's) and `files` (uploaded files until they are read) share its
    client."""

    def __init__(
        self, client: redis.Redis, *, shard_size: int, ttl_s: int, blobs: BlobStore | None = None
    ) -> None:
        self.r = client
        self.shard_size = shard_size
        self.ttl_s = ttl_s
        self.deliveries = Deliveries(client)
        self.idempotency = IdempotencyKeys(client)
        self.recovery = Recovery(client, ttl_s=ttl_s)
        self.files = Files(client, blobs)
        self._complete = connection.script(client, "complete_shard")
        self._running = connection.script(client, "mark_running")
        self._cancel = connection.script(client, "cancel")

    @classmethod
    def from_url(
        cls, url: str, *, shard_size: int, ttl_s: int, blobs: BlobStore | None = None
    ) -> JobStore:
        return cls(connection.connect(url), shard_size=shard_size, ttl_s=ttl_s, blobs=blobs)

    # --- reading ------------------------------------------------------------------
    def get_job(self, job_id: str, *, tenant: str | None = None) -> JobRecord:
        """The job; with `tenant`, only if that tenant created it: another tenant's job is
        NotFound, exactly like one that does not exist, so ids reveal nothing."""
        h = self.r.hgetall(keys.job(job_id))
        if not h or (tenant is not None and decode(h).get("tenant") != tenant):
            raise NotFound(f"job {job_id!r} not found", {"job_id": job_id})
        return JobRecord.from_redis(decode(h))

    def load_shard(self, job: JobRecord, n: int) -> list[ShardDocument]:
        """Shard n's documents, with their positions in the upload."""
        raw = self.r.get(keys.shard(job.id, n))
        if raw is None:
            raise NotFound(f"shard {n} of job {job.id!r} not found (expired?)")
        assert isinstance(raw, bytes)  # the client does not decode responses
        base = n * job.shard_size
        return [shard_document(base + i, entry) for i, entry in enumerate(unpack_shard(raw))]

    def results_page(
        self, job: JobRecord, cursor: int, limit: int
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Results from document `cursor` on, in upload order, and the next cursor.

        While the job runs the page stops at the first document without a result (the next
        cursor points there, so a client can poll from where it stopped); once the job is
        final, documents of skipped shards (cancelled jobs) are left out. The next cursor
        is None once every document has been passed.
        """
        if job.manifest is None:
            end = min(cursor + limit, job.documents)
            wanted: Sequence[int] = range(cursor, end)
            nxt: int | None = end if end < job.documents else None
        else:
            wanted, nxt = self._manifest_numbers(job, cursor, limit)
        values = self.r.hmget(keys.results(job.id), [str(i) for i in wanted]) if wanted else []
        data: list[dict[str, Any]] = []
        for i, raw in zip(wanted, values, strict=True):
            if raw is None:
                if not job.status.final:
                    return data, i
                continue
            data.append(json.loads(raw))
        return data, nxt

    def _manifest_numbers(
        self, job: JobRecord, cursor: int, limit: int
    ) -> tuple[list[int], int | None]:
        """A manifest job's document numbers from `cursor` on, in manifest order, and the
        next cursor. Part n's documents are numbered from n * shard_size (store/manifests.py)
        as its worker reads it, so numbers of parts not read yet are not known: while the
        job runs the page stops there."""
        read = decode(self.r.hgetall(keys.parts_read(job.id)))
        counts = {int(k): int(v) for k, v in read.items()}
        stride = job.shard_size
        wanted: list[int] = []
        nxt: int | None = None
        for n in range(cursor // stride, job.shards):
            if n not in counts:  # not read yet: nothing of it can be answered
                if not job.status.final:
                    nxt = max(cursor, n * stride)
                    break
                continue
            wanted += range(max(cursor, n * stride), n * stride + counts[n])
            if len(wanted) >= limit:
                wanted = wanted[:limit]
                nxt = wanted[-1] + 1
                break
        if nxt is not None and nxt >= job.shards * stride:
            nxt = None
        return wanted, nxt

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

    def finish_shard(
        self,
        job_id: str,
        n: int,
        results: Sequence[tuple[int, dict[str, Any]]],
        *,
        drop_documents: bool = False,
    ) -> Transition:
        """Write a shard's results and progress atomically (and, with `drop_documents`, delete
        its documents); says whether this call made the job final.

        Safe to call twice for the same shard: a completed shard is written again only by
        a run with fewer failed documents (a late give-up never overwrites results, a
        duplicate run answers nothing twice), counters do not double, and only one call ever
        reports the final transition. Each write of a document's result is counted
        (`answers`).
        """
        failed = sum(1 for _, r in results if "error" in r)
        args: list[Any] = [n, failed, repr(time.time()), int(drop_documents)]
        for index, result in results:
            args += [index, json.dumps(result, ensure_ascii=False)]
        reply = self._complete(
            keys=[
                keys.job(job_id),
                keys.results(job_id),
                keys.shards_done(job_id),
                keys.webhook(job_id),
                keys.shard(job_id, n),
                keys.answers(job_id),
            ],
            args=args,
        )
        return _transition(reply)

    def complete_shard(
        self, job_id: str, n: int, results: Sequence[tuple[int, dict[str, Any]]]
    ) -> JobStatus | None:
        """`finish_shard`, keeping the documents; returns only the job's status after it."""
        return self.finish_shard(job_id, n, results).status

    def shard_completed(self, job_id: str, n: int) -> bool:
        """Whether shard n has results (so a redelivery of it has nothing left to do)."""
        return bool(self.r.hexists(keys.shards_done(job_id), str(n)))

    def completed_shards(self, job_id: str) -> set[int]:
        """The shards of a job that have results."""
        return {int(n) for n in self.r.hkeys(keys.shards_done(job_id))}

    def answers(self, job_id: str) -> dict[int, int]:
        """How many times each document's result was written (the exactly-once ledger)."""
        return {int(i): int(c) for i, c in self.r.hgetall(keys.answers(job_id)).items()}

    def request_cancel(self, job_id: str) -> Transition:
        """Cancel a job that is not final; says whether this call cancelled it."""
        reply = self._cancel(
            keys=[keys.job(job_id), keys.webhook(job_id)], args=[repr(time.time())]
        )
        transition = _transition(reply)
        if transition.status is None:
            raise NotFound(f"job {job_id!r} not found", {"job_id": job_id})
        return transition

    def cancel(self, job_id: str) -> JobStatus:
        """`request_cancel`, returning only the status after it."""
        status = self.request_cancel(job_id).status
        assert status is not None
        return status

    def memory(self) -> connection.StoreMemory | None:
        """The store's memory against its limit; None while Redis does not answer."""
        try:
            return connection.memory(self.r)
        except StoreUnavailable:
            return None

    def ping(self) -> bool:
        try:
            return bool(self.r.ping())
        except StoreUnavailable:
            return False
