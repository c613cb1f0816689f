"""Webhook deliveries that are due go to their queue: retries, and attempts whose worker died.

Why not Celery's retry: a retry with a countdown, on a Redis broker, is a message a worker
takes at once and holds unacknowledged until it is due (up to `webhook_backoff_max_s`, half
an hour); a worker killed meanwhile takes it along until the broker's visibility timeout (an
hour), and getting it back sooner meant reaching into kombu's own bookkeeping. The job store
already knows when each event's next attempt is due (`next_at`, written with the failed
attempt), so the event waits there, in a schedule (docq/store/deliveries.py), not in a
worker: a failed attempt's task returns, and the sweeper (workers/sweeper.py, a thread in
every shard worker) enqueues the delivery when it is due.

The schedule also covers the deaths in between. An attempt, when claimed, schedules its
event for the end of its lease: a worker that dies mid-attempt leaves it due then. A sweeper
that enqueues an event moves it on by `webhook_stall_s`: a message lost on its way (taken by
a worker killed before kombu recorded it), or one whose worker died before claiming its
attempt, leaves it due again then. A copy that finds its attempt already running, not yet
due, or the event settled, sends nothing (claim_attempt.lua), so a second message is
harmless. An event never enqueued at all (its job's worker died first) is the audits'
(workers/audit.py).
"""

from __future__ import annotations

import logging

from celery import Celery

from docq import webhooks
from docq.jobs import DeliveryState
from docq.queue import enqueue_webhook
from docq.store import JobStore

log = logging.getLogger(__name__)


def enqueue_due(store: JobStore, celery: Celery, *, now: float, stall_s: float) -> int:
    """Enqueue the delivery of every event due by `now` under its chain (a new chain when
    it has none: a redelivery's), and look at each again `stall_s` later unless an attempt
    reschedules it first; returns how many it enqueued. Raises QueueUnavailable or
    StoreUnavailable: what it claimed and did not enqueue comes due again then."""
    enqueued = 0
    for job_id, claim in store.deliveries.claim_due(now, now + stall_s):
        state, token = store.deliveries.dispatch_state(job_id)
        if state is not DeliveryState.PENDING:  # settled, or the job expired
            store.deliveries.unschedule(job_id, claim)
            continue
        if token is None:
            enqueued += webhooks.dispatch(store, celery, job_id)
            continue
        log.info("job %s: its webhook attempt is due; enqueued", job_id, extra={"job_id": job_id})
        enqueue_webhook(celery, job_id, token)
        enqueued += 1
    return enqueued
