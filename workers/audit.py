"""Audits of jobs not yet final, and of final jobs whose webhook event is not yet settled:
a shard or an event whose message was lost is enqueued again.

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

A final job stays audited until its webhook event is settled (delivered, failed or
dead-lettered), because its event can be lost the same ways: the worker that made the job
final may die before it enqueues the delivery, and a Celery retry whose publish fails
(the broker restarting) is rejected, which on Redis acknowledges the old message while the
new one was never written. A pending event whose delivery message is in no queue and no
unacknowledged hash at two audits is enqueued again: as a new chain when none was ever
enqueued (webhooks.dispatch), else as its own chain (the claim keeps a twin from sending
twice, workers/webhooks.py). An event the retry schedule holds (one attempted at least once,
waiting for its next attempt) has no message on purpose: the sweeper enqueues it when it is
due (workers/retries.py), so the audit leaves it to the schedule.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from docq import webhooks
from docq.errors import NotFound, QueueUnavailable
from docq.jobs import DeliveryState, JobRecord
from docq.queue import (
    EXTRACT_QUEUE,
    WEBHOOKS_QUEUE,
    delivery_of,
    enqueue_shards,
    enqueue_webhook,
    shard_of,
    shard_queue,
)
from docq.store import JobStore
from docq.store.recovery import EVENT

log = logging.getLogger(__name__)

# Messages read per LRANGE when a queue is looked through.
PAGE = 1000


def audit(store: JobStore, celery: Celery, *, every_s: float, now: float, lanes: int) -> int:
    """Audit the jobs due (last audited `every_s` before `now`), enqueue again the shards
    and events lost since their previous audit, and return how many; a job found gone, or
    final with its event settled (or without a webhook), is no longer audited. Raises
    QueueUnavailable or StoreUnavailable; a job claimed and not audited is audited at its
    next turn."""
    jobs: list[JobRecord] = []
    events: list[tuple[str, str | None]] = []  # final jobs' pending events: (job, chain)
    for job_id in store.recovery.claim_audits(now - every_s, now):
        try:
            job = store.get_job(job_id)
        except NotFound:
            job = None
        if job is None:
            store.recovery.retire(job_id)
        elif job.status.final:
            state, token = store.deliveries.dispatch_state(job_id)
            if state is DeliveryState.PENDING:
                events.append((job_id, token))
            else:
                store.recovery.retire(job_id)
        elif not store.recovery.is_unenqueued(job_id):
            jobs.append(job)
    if not jobs and not events:
        return 0
    try:
        queues = {shard_queue(job, lanes) for job in jobs}
        if any(job.files for job in jobs):  # their shards wait in the extract queue first
            queues.add(EXTRACT_QUEUE)
        if events:
            queues.add(WEBHOOKS_QUEUE)
        seen = messages(celery, queues)
    except (OperationalError, RedisError, OSError) as exc:
        raise QueueUnavailable("the broker's queues", str(exc)) from exc
    shards = seen.shards | set(store.recovery.held())
    enqueued = 0
    for job in jobs:
        done = store.completed_shards(job.id)
        missing = {n for n in range(job.shards) if n not in done and (job.id, n) not in shards}
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
    for job_id, token in events:
        enqueued += _chase_event(store, celery, job_id, token, seen.deliveries, now)
    return enqueued


def _chase_event(
    store: JobStore,
    celery: Celery,
    job_id: str,
    token: str | None,
    seen: set[tuple[str, str]],
    now: float,
) -> int:
    """Enqueue again the delivery of a final job's pending event (chain `token`; None:
    none was enqueued) if its message was found nowhere at this audit and the previous
    one; returns 1 if it did, else 0. A copy that was in flight after all makes a twin,
    which the attempt claim keeps from sending twice."""
    found = (token and (job_id, token) in seen) or store.deliveries.scheduled(job_id)
    missing = set() if found else {EVENT}
    if not store.recovery.missing_again(job_id, missing, now):
        return 0
    if token is None:
        log.warning(
            "job %s: final at two audits with its event never enqueued (its worker died or "
            "the broker refused it); enqueued now",
            job_id,
        )
        return int(webhooks.dispatch(store, celery, job_id))
    log.warning(
        "job %s: its webhook message was in no queue and no unacknowledged hash at two "
        "audits (lost to a worker killed as it took it, or to a failed retry); enqueued again",
        job_id,
    )
    enqueue_webhook(celery, job_id, token)
    return 1


@dataclass(frozen=True, slots=True)
class Seen:
    """What an audit found in the broker: shards of process and extract messages, and
    (job id, chain token) of webhook deliveries."""

    shards: set[tuple[str, int]]
    deliveries: set[tuple[str, str]]


def messages(celery: Celery, queues: set[str]) -> Seen:
    """The shards and deliveries of the messages waiting in `queues` (each priority level)
    and of every message the broker holds unacknowledged, read in that order. A queue is
    read from its head (newest) in pages: a message pushed meanwhile shifts the others
    further, none is skipped."""
    seen = Seen(set(), set())
    with celery.connection_for_write() as conn:
        channel: Any = conn.default_channel
        client = channel.client
        for queue in queues:
            for pri in channel.priority_steps:
                name, start = channel._q_for_pri(queue, pri), 0
                while page := client.lrange(name, start, start + PAGE - 1):
                    for raw in page:
                        _note(seen, json.loads(raw))
                    start += PAGE
        for raw in client.hvals(channel.unacked_key):  # each [message, exchange, key]
            _note(seen, json.loads(raw)[0])
    return seen


def _note(seen: Seen, message: dict[str, Any]) -> None:
    if shard := shard_of(message):
        seen.shards.add(shard)
    elif delivery := delivery_of(message):
        seen.deliveries.add(delivery)
