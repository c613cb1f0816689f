"""Audits of jobs not yet final: a shard whose message was lost is enqueued again.

Why leases and restores are not enough: kombu's Redis transport hands a message to a worker
with BRPOP, which removes it from its queue, and records it in its `unacked` hash only once
the worker has read the reply, a few milliseconds later (kombu/transport/redis.py,
`_brpop_read` then `QoS.append`). A worker killed in between, and a worker is most likely
to be taking its next message right after it finished a shard, leaves the message nowhere:
not queued, not unacknowledged, not leased. Nothing would ever run that shard again.

So every `audit_interval_s` each unfinished job is looked for everywhere a shard of it can
be, in the order a shard moves through them: its queue, the broker's unacknowledged
messages, the leases, then its results. A shard found in none of them is recorded; one
still missing at the job's next audit is enqueued again. The second look keeps the audit
from duplicating a message that was in flight at the first one (harmless if it did: shard
writes are idempotent), and a job whose shards are not yet enqueued is the sweeper's.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from docq.errors import NotFound, QueueUnavailable
from docq.jobs import JobRecord
from docq.queue import EXTRACT_QUEUE, enqueue_shards, shard_of, shard_queue
from docq.store import JobStore

log = logging.getLogger(__name__)

# Messages read per LRANGE when a queue is looked through.
PAGE = 1000


def audit(store: JobStore, celery: Celery, *, every_s: float, now: float, lanes: int) -> int:
    """Audit the jobs due (last audited `every_s` before `now`), enqueue again the shards
    lost since their previous audit, and return how many; a job found final or gone is no
    longer audited. Raises QueueUnavailable or StoreUnavailable; a job claimed and not
    audited is audited at its next turn."""
    jobs: list[JobRecord] = []
    for job_id in store.recovery.claim_audits(now - every_s, now):
        try:
            job = store.get_job(job_id)
        except NotFound:
            job = None
        if job is None or job.status.final:
            store.recovery.retire(job_id)
        elif not store.recovery.is_unenqueued(job_id):
            jobs.append(job)
    if not jobs:
        return 0
    try:
        queues = {shard_queue(job, lanes) for job in jobs}
        if any(job.files for job in jobs):  # their shards wait in the extract queue first
            queues.add(EXTRACT_QUEUE)
        seen = messages(celery, queues)
    except (OperationalError, RedisError, OSError) as exc:
        raise QueueUnavailable("the broker's queues", str(exc)) from exc
    seen |= set(store.recovery.held())
    enqueued = 0
    for job in jobs:
        done = store.completed_shards(job.id)
        missing = {n for n in range(job.shards) if n not in done and (job.id, n) not in seen}
        lost = sorted(store.recovery.missing_again(job.id, missing, now))
        if lost:
            log.warning(
                "job %s: shards %s were in no queue, unacknowledged message or lease at two "
                "audits (a worker died as it took them from Redis); enqueued again",
                job.id,
                lost,
            )
            enqueue_shards(celery, job, lost, lanes=lanes)
            enqueued += len(lost)
    return enqueued


def messages(celery: Celery, queues: set[str]) -> set[tuple[str, int]]:
    """The shards of the process_shard messages waiting in `queues` (each priority level)
    and of every message the broker holds unacknowledged, read in that order. A queue is
    read from its head (newest) in pages: a message pushed meanwhile shifts the others
    further, none is skipped."""
    shards: set[tuple[str, int]] = set()
    with celery.connection_for_write() as conn:
        channel: Any = conn.default_channel
        client = channel.client
        for queue in queues:
            for pri in channel.priority_steps:
                name, start = channel._q_for_pri(queue, pri), 0
                while page := client.lrange(name, start, start + PAGE - 1):
                    shards.update(s for raw in page if (s := shard_of(json.loads(raw))))
                    start += PAGE
        for raw in client.hvals(channel.unacked_key):  # each [message, exchange, key]
            shards.update(s for s in [shard_of(json.loads(raw)[0])] if s)
    return shards
