"""Webhook messages a dead webhooks worker was holding go back to their queue.

Why: a failed delivery is retried through Celery's retry with a countdown, and on a Redis
broker a message with a countdown is taken by a worker at once and held, unacknowledged,
until it is due (kombu's `unacked` hash). A webhooks worker killed meanwhile takes the
retry with it, and Redis gives the message back only after the visibility timeout (an hour,
sized for the slowest shard): the event would wait an hour for nothing. The same goes for a
message a worker had taken and not yet started (prefetch), and for one whose attempt it was
making.

A live worker with a held retry claims its attempt when it is due (claim_attempt.lua sets
`busy_until`, finish_attempt.lua the next `next_at`). So a held message of the chain that
owns the round, whose attempt is `webhook_stall_s` overdue and whose last attempt's lease is
over, belongs to a dead worker: the sweeper (workers/sweeper.py, a thread in every shard
worker) puts it back in its queue, where the next free webhooks worker runs it at once (its
countdown is past). If its worker was only slow, the two copies share one chain: the claim
lets one attempt at a time, and once delivered neither sends again.

Messages still waiting in the queue are never touched: a backlog of deliveries is served in
order, not re-queued behind itself. A message that is in neither place (lost in the instant
between the BRPOP that takes it and kombu's record of it, or acknowledged by a retry whose
publish failed) and an event never enqueued at all are the audits' (workers/audit.py).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from celery import Celery
from kombu.exceptions import OperationalError
from redis.exceptions import RedisError

from docq.errors import QueueUnavailable
from docq.jobs import DeliveryState
from docq.queue import delivery_of
from docq.store import JobStore

log = logging.getLogger(__name__)


def restore_stalled(store: JobStore, celery: Celery, *, stall_s: float, now: float) -> int:
    """Put back in its queue every webhook message held unacknowledged since before
    `now - stall_s` whose chain owns its round and stalled; returns how many. Raises
    QueueUnavailable (or StoreUnavailable); what it did not restore, the next sweep sees."""
    try:
        return _restore(store, celery, stall_s, now)
    except (OperationalError, RedisError, OSError) as exc:
        raise QueueUnavailable("the broker's unacknowledged messages", str(exc)) from exc


def stalled(store: JobStore, job_id: str, token: str, *, stall_s: float, now: float) -> bool:
    """Whether chain `token` of the job's delivery owns its round (or none does yet), is not
    mid-attempt, and its next attempt is `stall_s` overdue: whoever holds it is not running it."""
    p = store.deliveries.progress(job_id)
    if p.state is not DeliveryState.PENDING or p.token not in (None, token):
        return False  # delivered, failed, gone, or another chain's round: nothing to send
    return p.busy_until <= now and p.next_at + stall_s <= now


def _restore(store: JobStore, celery: Celery, stall_s: float, now: float) -> int:
    restored = 0
    with celery.connection_for_write() as conn:
        channel: Any = conn.default_channel
        client = channel.client
        for tag in client.zrangebyscore(channel.unacked_index_key, "-inf", now - stall_s):
            raw = client.hget(channel.unacked_key, tag)
            delivery = delivery_of(json.loads(raw)[0]) if raw else None
            if delivery is None or not stalled(store, *delivery, stall_s=stall_s, now=now):
                continue
            log.warning(
                "job %s: its webhook message was held by a webhooks worker that is gone (the "
                "attempt is %gs overdue); the message is back in its queue",
                delivery[0],
                stall_s,
            )
            channel.qos.restore_by_tag(tag, client)  # atomic: two sweepers restore it once
            restored += 1
    return restored
