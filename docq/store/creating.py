"""Creating jobs on Redis: the writes of an upload, and their undoing when it fails.

An upload is written in one transaction (`create_job`): its shards, its record, and what
makes the job known (its tenant's load, its webhook, the sweeper's and the audits' lists,
its Idempotency-Key). A large text upload is written in two (`open_job`, then
`close_job`), so that workers start on its first shards while the API stores the rest;
until the second write nothing lists the job and everything of it expires on its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis

from docq import keys
from docq.errors import NotReplicated, StoreUnavailable
from docq.jobs import DEFAULT_TENANT, DeliveryState, JobRecord, JobStatus
from docq.store import connection
from docq.store.codec import Document, pack_shards
from docq.store.deliveries import WebhookTarget
from docq.store.files import Files
from docq.store.idempotency import IdempotencyClaim, IdempotencyKeys

log = logging.getLogger(__name__)

# How long what `open_job` writes lives until `close_job` gives the job its retention: far
# longer than storing the largest upload takes (seconds), and short enough that an API
# process dying in between leaves nothing for long.
OPENING_TTL_S = 600


def failures(documents: Sequence[Document]) -> list[dict[str, Any]]:
    """`{document, id, error_code, message}` of each document failed at upload."""
    return [
        {"document": i, "id": d.id, "error_code": d.error_code, "message": d.error}
        for i, d in enumerate(documents)
        if d.error_code is not None
    ]


class Creating:
    """JobStore's writes of new jobs (it holds the client, the shard size and retention)."""

    r: redis.Redis
    shard_size: int
    ttl_s: int
    files: Files
    idempotency: IdempotencyKeys
    # Replicas an upload's write must reach (Redis WAIT), and the most it waits (ms).
    replication: tuple[int, int] = (0, 0)

    def get_job(self, job_id: str, *, tenant: str | None = None) -> JobRecord:
        raise NotImplementedError  # JobStore's

    @staticmethod
    def new_job_id() -> str:
        return uuid.uuid4().hex

    def create_job(
        self,
        model: str,
        documents: Sequence[Document],
        *,
        webhook: WebhookTarget | None = None,
        job_id: str | None = None,
        priority: bool = False,
        tenant: str = DEFAULT_TENANT,
        idempotency: tuple[str, IdempotencyClaim] | None = None,
    ) -> JobRecord:
        """Store the documents in compressed shards, the job record (with its tenant) and
        its webhook, in one transaction, and count the job in the tenant's load; every key
        expires after the retention time. `idempotency` (key digest, claim): the claimed
        Idempotency-Key is bound to the job in the same transaction. With `replication`,
        a write the replicas do not confirm raises NotReplicated, the job removed as far as
        a dying master lets it (what a replica kept, the sweeper enqueues whole)."""
        job_id = job_id or self.new_job_id()
        record = self._record(job_id, model, documents, priority, tenant)
        with self.r.pipeline(transaction=True) as p:
            self._write_shards(p, job_id, documents, 0, self.ttl_s)
            self.files.store_in(p, job_id, documents, ttl_s=self.ttl_s)
            if failed := failures(documents):
                p.set(keys.invalid(job_id), json.dumps(failed), ex=self.ttl_s)
            p.hset(keys.job(job_id), mapping=record)
            p.expire(keys.job(job_id), self.ttl_s)
            self._list_in(p, job_id, tenant, webhook, idempotency, float(record["created_at"]))
            replies = self._execute(p, job_id, record["shards"])
        if idempotency is not None and not replies[-1]:
            log.warning("job %s: its Idempotency-Key claim was lost before it was bound", job_id)
        return self.get_job(job_id)

    def invalid_documents(self, job_id: str) -> list[dict[str, Any]]:
        """The documents of the job that the API accepted as failed (upload order)."""
        raw = self.r.get(keys.invalid(job_id))
        return json.loads(raw) if raw else []

    def open_job(
        self,
        model: str,
        documents: Sequence[Document],
        head: int,
        *,
        job_id: str | None = None,
        priority: bool = False,
        tenant: str = DEFAULT_TENANT,
    ) -> JobRecord:
        """The first of the two writes of a large text upload (`close_job` is the second):
        the job's record and its first `head` shards, so that workers can start on them
        while the rest is stored. Until it is closed the job is listed nowhere (not in its
        tenant's jobs, not for the sweeper or the audits), its Idempotency-Key stays
        unbound, it cannot finish (its other shards are missing) and everything of it
        expires after OPENING_TTL_S: an API process that dies before closing it leaves
        nothing that lasts, and nobody was told its id."""
        if any(d.content_type is not None for d in documents):
            raise ValueError("only text uploads are stored in two writes (files: create_job)")
        job_id = job_id or self.new_job_id()
        record = self._record(job_id, model, documents, priority, tenant)
        if not 0 < head < record["shards"]:
            raise ValueError(f"head must be 1..{record['shards'] - 1} shards, not {head}")
        with self.r.pipeline(transaction=True) as p:
            self._write_shards(p, job_id, documents[: head * self.shard_size], 0, OPENING_TTL_S)
            p.hset(keys.job(job_id), mapping=record)
            p.expire(keys.job(job_id), OPENING_TTL_S)
            self._execute(p, job_id, head)
        return self.get_job(job_id)

    def close_job(
        self,
        job: JobRecord,
        documents: Sequence[Document],
        head: int,
        *,
        webhook: WebhookTarget | None = None,
        idempotency: tuple[str, IdempotencyClaim] | None = None,
    ) -> None:
        """The second write of a job `open_job` wrote with `head` shards: the rest of its
        shards, its webhook, its tenant's load, the sweeper's and the audits' lists and its
        Idempotency-Key, in one transaction, and every key of the job (what workers wrote
        meanwhile too) given the retention time. Raises StoreUnavailable when the opened
        job is gone (it outlived OPENING_TTL_S: what this wrote is removed), NotReplicated
        as create_job."""
        job_id = job.id
        with self.r.pipeline(transaction=True) as p:
            p.expire(keys.job(job_id), self.ttl_s)  # first: its reply says the job is there
            for key in (keys.results(job_id), keys.shards_done(job_id), keys.answers(job_id)):
                p.expire(key, self.ttl_s)  # (the replies of keys not written yet are 0)
            for n in range(head):
                p.expire(keys.shard(job_id, n), self.ttl_s)
            rest = documents[head * self.shard_size :]
            self._write_shards(p, job_id, rest, head, self.ttl_s)
            self._list_in(p, job_id, job.tenant, webhook, idempotency, time.time())
            replies = self._execute(p, job_id, job.shards)
        if not replies[0]:  # what this wrote for a job that is gone goes too
            self.delete_job(job_id, job.shards, tenant=job.tenant)
            raise StoreUnavailable(
                f"job {job_id} expired before its upload was stored (over {OPENING_TTL_S} s)"
            )
        if idempotency is not None and not replies[-1]:
            log.warning("job %s: its Idempotency-Key claim was lost before it was bound", job_id)

    def _record(
        self,
        job_id: str,
        model: str,
        documents: Sequence[Document],
        priority: bool,
        tenant: str,
    ) -> dict[Any, Any]:
        """The job's record as its hash holds it when it is created."""
        return {
            "id": job_id,
            "model": model,
            "status": JobStatus.QUEUED.value,
            "documents": len(documents),
            "shards": math.ceil(len(documents) / self.shard_size),
            "shard_size": self.shard_size,
            "documents_done": 0,
            "documents_failed": 0,
            "created_at": repr(time.time()),
            "lane": "priority" if priority else "bulk",
            "tenant": tenant,
            # files to read first; a document failed at upload has none (its shard says why)
            "files": sum(1 for d in documents if d.content is not None),
        }

    def _write_shards(
        self, p: Any, job_id: str, documents: Sequence[Document], first: int, ttl_s: int
    ) -> None:
        """Queue on `p` the shards of `documents`, numbered from `first`."""
        starts = range(0, len(documents), self.shard_size)
        chunks = (documents[i : i + self.shard_size] for i in starts)
        for n, packed in enumerate(pack_shards(chunks), start=first):
            p.set(keys.shard(job_id, n), packed, ex=ttl_s)

    def _list_in(
        self,
        p: Any,
        job_id: str,
        tenant: str,
        webhook: WebhookTarget | None,
        idempotency: tuple[str, IdempotencyClaim] | None,
        now: float,
    ) -> None:
        """Queue on `p` what makes a stored job known: its tenant's set, its webhook, the
        sweeper's and the audits' lists (from `now`), and (last, its reply last) its
        Idempotency-Key."""
        p.sadd(keys.tenant_jobs(tenant), job_id)
        p.expire(keys.tenant_jobs(tenant), self.ttl_s)
        if webhook is not None:
            p.hset(
                keys.webhook(job_id),
                mapping={
                    "url": webhook.url,
                    "secret": webhook.secret,
                    "state": DeliveryState.WAITING.value,
                    # one event per job, so the job id makes a stable webhook id
                    "webhook_id": f"msg_{job_id}",
                    "secret_generated": int(webhook.secret_generated),
                },
            )
            p.expire(keys.webhook(job_id), self.ttl_s)
        # Listed until its shards are enqueued: the sweeper enqueues a job left behind.
        p.zadd(keys.unenqueued(), {job_id: now})
        # Audited until found final: a shard whose message is lost is enqueued again.
        p.zadd(keys.active(), {job_id: now})
        if idempotency is not None:
            self.idempotency.bind_in(p, *idempotency, ttl_s=self.ttl_s)

    def _execute(self, p: Any, job_id: str, shards: int) -> list[Any]:
        """Run the transaction `p`, made to wait for the replicas: one they do not confirm
        removes the job (as far as a dying master lets it) and raises NotReplicated."""
        try:
            return connection.replicated(p, *self.replication).execute()  # type: ignore[no-any-return]
        except NotReplicated:
            with contextlib.suppress(StoreUnavailable):
                self.delete_job(job_id, shards)
            raise

    def delete_job(
        self, job_id: str, shards: int, files: Sequence[int] = (), *, tenant: str | None = None
    ) -> None:
        """Remove a job that could not be enqueued, so that a failed upload leaves nothing
        (`files`: the positions of its file documents; `tenant`: also from its tenant's
        jobs, which otherwise lose it the next time they are counted)."""
        with self.r.pipeline(transaction=True) as p:
            p.delete(
                keys.job(job_id),
                keys.results(job_id),
                keys.shards_done(job_id),
                keys.answers(job_id),
                keys.webhook(job_id),
                keys.webhook_attempts(job_id),
                keys.missing(job_id),
                keys.invalid(job_id),
                keys.parts_read(job_id),
                keys.document_ids(job_id),
                *(keys.shard(job_id, n) for n in range(shards)),
                *(keys.file(job_id, i) for i in files),
            )
            p.zrem(keys.unenqueued(), job_id)
            p.zrem(keys.active(), job_id)
            if tenant is not None:
                p.srem(keys.tenant_jobs(tenant), job_id)
            p.execute()
