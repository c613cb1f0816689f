"""workers.retries: a webhook event waits in the job store's schedule, not in a worker, and
the sweeper enqueues its delivery when it is due: after a failed attempt's backoff, after a
dead worker's attempt lease, again after a lost message. Against a real redis-server that is
the broker and the job store (no worker consumes the queue: the test plays the worker)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
import redis
from celery import Celery

from docq import keys
from docq.jobs import Attempt, DeliveryState
from docq.queue import WEBHOOKS_QUEUE, delivery_of
from docq.store import Document, JobStore, WebhookTarget
from docq.webhook_guard import generate_secret
from docq.webhooks import dispatch
from workers.retries import enqueue_due

STALL_S = 30.0
LEASE_S = 12.0


@pytest.fixture
def store(own_store: JobStore) -> JobStore:
    return own_store


def final_job(store: JobStore) -> str:
    target = WebhookTarget("https://hooks.example.com/h", generate_secret())
    job = store.create_job("doc-type", [Document("a", "text")], webhook=target)
    result = {"id": "a", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}
    assert store.finish_shard(job.id, 0, [(0, result)]).performed
    return job.id


def queued(url: str) -> list[tuple[str, str]]:
    raws = redis.Redis.from_url(url).lrange(WEBHOOKS_QUEUE, 0, -1)
    return [d for raw in raws if (d := delivery_of(json.loads(raw)))]


def take(url: str) -> tuple[str, str]:
    """Take the oldest delivery message off the queue, as a worker would."""
    raw = redis.Redis.from_url(url).rpop(WEBHOOKS_QUEUE)
    assert isinstance(raw, bytes)
    found = delivery_of(json.loads(raw))
    assert found is not None
    return found


def fail_attempt(store: JobStore, job_id: str, token: str, retry_in_s: float) -> None:
    """What a webhooks worker does with an attempt that got a 503."""
    outcome, _ = store.deliveries.claim_attempt(job_id, token, LEASE_S)
    assert outcome == "claimed"
    attempt = Attempt(1, datetime.now(UTC), 5.0, 503, "HTTP 503")
    assert store.deliveries.finish_attempt(
        job_id, token, attempt, DeliveryState.PENDING, retry_in_s
    )


def test_a_failed_attempt_is_enqueued_again_when_its_retry_is_due_and_not_before(
    store: JobStore, celery: Celery, url: str
) -> None:
    job_id = final_job(store)
    assert dispatch(store, celery, job_id)
    _, token = take(url)
    fail_attempt(store, job_id, token, retry_in_s=60)
    t0 = time.time()
    assert enqueue_due(store, celery, now=t0 + 50, stall_s=STALL_S) == 0  # not due yet
    assert queued(url) == []
    assert enqueue_due(store, celery, now=t0 + 61, stall_s=STALL_S) == 1
    assert queued(url) == [(job_id, token)]  # under its own chain
    # another sweeper, or the next sweep, does not enqueue it twice
    assert enqueue_due(store, celery, now=t0 + 62, stall_s=STALL_S) == 0
    assert len(queued(url)) == 1
    # the message was lost (a worker killed as it took it): due again a stall later
    take(url)
    assert enqueue_due(store, celery, now=t0 + 61 + STALL_S + 1, stall_s=STALL_S) == 1
    assert queued(url) == [(job_id, token)]


def test_an_attempt_whose_worker_died_is_enqueued_again_when_its_lease_ends(
    store: JobStore, celery: Celery, url: str
) -> None:
    job_id = final_job(store)
    assert dispatch(store, celery, job_id)
    _, token = take(url)
    outcome, _ = store.deliveries.claim_attempt(job_id, token, LEASE_S)
    assert outcome == "claimed"  # ... and its worker is SIGKILLed mid-attempt
    t0 = time.time()
    assert enqueue_due(store, celery, now=t0 + LEASE_S - 2, stall_s=STALL_S) == 0
    assert enqueue_due(store, celery, now=t0 + LEASE_S + 1, stall_s=STALL_S) == 1
    assert queued(url) == [(job_id, token)]


def test_a_settled_event_leaves_the_schedule_and_is_not_enqueued(
    store: JobStore, celery: Celery, url: str
) -> None:
    job_id = final_job(store)
    assert dispatch(store, celery, job_id)
    _, token = take(url)
    fail_attempt(store, job_id, token, retry_in_s=5)
    store.r.hset(keys.webhook(job_id), "state", "delivered")  # e.g. settled by a twin
    assert enqueue_due(store, celery, now=time.time() + 10, stall_s=STALL_S) == 0
    assert queued(url) == []
    assert store.r.zscore(keys.webhooks_due(), job_id) is None


def test_no_delivery_is_held_unacknowledged_while_it_waits(
    store: JobStore, celery: Celery, url: str
) -> None:
    """The old mechanism (Celery's countdown) kept the retry as a message a worker held in
    kombu's unacked hash until due; now nothing is in the broker while an event waits."""
    job_id = final_job(store)
    assert dispatch(store, celery, job_id)
    _, token = take(url)
    fail_attempt(store, job_id, token, retry_in_s=600)
    r = redis.Redis.from_url(url)
    assert r.llen(WEBHOOKS_QUEUE) == 0 and r.hlen("unacked") == 0
    assert store.deliveries.scheduled(job_id)
