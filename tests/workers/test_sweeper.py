"""workers.sweeper and workers.audit: leases of running shards, the sweep that recovers
what a dead process left behind and the audits that find lost messages, against a real
redis-server that is also the broker (queue lengths are read from it; no worker consumes
them)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest
import redis
from celery import Celery

from docq import keys
from docq.jobs import Attempt, DeliveryState
from docq.queue import (
    CPU_QUEUE,
    PRIORITY_QUEUE,
    WEBHOOKS_QUEUE,
    bulk_lane,
    consumed_queues,
    delivery_of,
    enqueue_shards,
    enqueue_webhook,
    shard_of,
)
from docq.store import Document, JobStore, WebhookTarget
from workers.audit import audit
from workers.sweeper import Lease, restore_unleased, sweep

LEASE_S = 30.0
EVERY_S = 60.0  # between audits of a job
LANES = 8


@pytest.fixture
def store(own_store: JobStore) -> JobStore:
    return own_store


def queued(url: str) -> dict[str, int]:
    """Messages waiting in the small-job lane and in the bulk queue (all its lanes)."""
    r = redis.Redis.from_url(url)
    bulk = sum(int(r.llen(q)) for q in consumed_queues([CPU_QUEUE], LANES))
    return {CPU_QUEUE: bulk, PRIORITY_QUEUE: int(r.llen(PRIORITY_QUEUE))}


def docs(n: int) -> list[Document]:
    return [Document(f"d{i}", f"text {i}") for i in range(n)]


def ok(index: int) -> tuple[int, dict]:
    return index, {"id": f"d{index}", "label": "invoice", "scores": {"invoice": 1.0}, "windows": 1}


def test_a_live_lease_is_left_alone_and_an_expired_one_is_enqueued_once(
    store: JobStore, celery: Celery, url: str
) -> None:
    job = store.create_job("doc-type", docs(8))
    store.recovery.enqueued(job.id)
    with Lease(store, job.id, 1, LEASE_S):
        now = time.time()
        assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=now) == 0  # still held
        assert queued(url) == {CPU_QUEUE: 0, PRIORITY_QUEUE: 0}
        later = now + LEASE_S + 1  # the worker died: nobody renewed it
        assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=later) == 1
        assert queued(url) == {CPU_QUEUE: 1, PRIORITY_QUEUE: 0}
        assert (
            sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=later + 2 * LEASE_S) == 0
        )  # dropped
    assert store.recovery.held() == {}


def test_an_expired_lease_of_a_done_shard_enqueues_nothing(
    store: JobStore, celery: Celery, url: str
) -> None:
    job = store.create_job("doc-type", docs(8), priority=True)
    store.recovery.enqueued(job.id)
    store.recovery.hold(job.id, 0, time.time())
    store.finish_shard(job.id, 0, [ok(i) for i in range(4)])  # done; the worker died at ack
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=time.time() + 1) == 0
    assert queued(url) == {CPU_QUEUE: 0, PRIORITY_QUEUE: 0}
    assert store.recovery.held() == {}


def test_a_lease_taken_again_while_being_swept_is_kept(store: JobStore) -> None:
    job = store.create_job("doc-type", docs(4))
    store.recovery.hold(job.id, 0, 1.0)
    [(_, _, claim)] = store.recovery.claim_expired(2.0, LEASE_S)
    store.recovery.hold(job.id, 0, 100.0)  # its new run started
    store.recovery.drop_lease(job.id, 0, claim)
    assert store.recovery.held() == {(job.id, 0): 100.0}


def test_a_job_never_enqueued_is_enqueued_in_its_lane_after_the_grace(
    store: JobStore, celery: Celery, url: str
) -> None:
    bulk = store.create_job("doc-type", docs(10))  # 3 shards, the API died before enqueueing
    small = store.create_job("doc-type", docs(2), priority=True)
    store.finish_shard(bulk.id, 1, [ok(i) for i in range(4, 8)])  # a shard already done
    enqueued = store.create_job("doc-type", docs(4))
    store.recovery.enqueued(enqueued.id)  # this one's API process enqueued it
    now = time.time()
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=now) == 0  # within the grace
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=now + LEASE_S + 1) == 3
    assert queued(url) == {CPU_QUEUE: 2, PRIORITY_QUEUE: 1}
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=now + 3 * LEASE_S) == 0  # once
    assert small.id  # (its shard went to the priority lane above)


def test_a_job_removed_after_a_failed_enqueue_is_not_swept(
    store: JobStore, celery: Celery, url: str
) -> None:
    job = store.create_job("doc-type", docs(4))
    store.delete_job(job.id, job.shards)
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=time.time() + 2 * LEASE_S) == 0
    assert queued(url) == {CPU_QUEUE: 0, PRIORITY_QUEUE: 0}


def test_a_swept_shard_goes_back_to_its_tenants_lane(
    store: JobStore, celery: Celery, url: str
) -> None:
    """The sweeper picks the lane as the API does: a tenant's shards stay in one lane."""
    tenants = ("acme", "globex")
    assert bulk_lane(tenants[0], LANES) != bulk_lane(tenants[1], LANES)
    r = redis.Redis.from_url(url)
    for tenant in tenants:
        job = store.create_job("doc-type", docs(8), tenant=tenant)
        store.recovery.enqueued(job.id)
        store.recovery.hold(job.id, 1, time.time())  # its worker died running shard 1
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=time.time() + 1) == 2
    for tenant in tenants:
        assert r.llen(bulk_lane(tenant, LANES)) == 1, tenant
    assert queued(url) == {CPU_QUEUE: 2, PRIORITY_QUEUE: 0}


def test_a_shard_is_leased_as_soon_as_its_message_is_received(
    store: JobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A message prefetched by a worker that is killed before a thread starts it is swept
    too: the lease is taken on receipt, and renewed until the message's run is over."""
    from types import SimpleNamespace

    from docq.queue import PROCESS_SHARD
    from workers import sweeper, tasks

    monkeypatch.setattr(tasks, "store", lambda: store)
    job = store.create_job("m", docs(2))
    tasks._lease_on_receipt(request=SimpleNamespace(name=PROCESS_SHARD, args=[job.id, 0]))
    assert (job.id, 0) in store.recovery.held()
    held = sweeper.heartbeat(store, LEASE_S)._held
    assert held[(job.id, 0)] == 1  # renewed while it waits
    tasks._end_receipt_lease(task=SimpleNamespace(name=PROCESS_SHARD), args=[job.id, 0])
    assert (job.id, 0) not in held


def take_and_die(url: str, queue: str) -> None:
    """A worker's broker client that pops a message and is killed before Celery receives
    it: kombu has moved it to its unacked hash, and nothing leased its shard."""
    code = (
        "import os\n"
        "from kombu import Connection\n"
        f"with Connection({url!r}) as conn:\n"
        f"    assert conn.default_channel.basic_get({queue!r}, no_ack=False) is not None\n"
        "    os._exit(0)  # no ack and no restore, as a SIGKILL leaves it\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_message_its_dead_worker_held_goes_back_to_its_queue_once(
    store: JobStore, celery: Celery, url: str
) -> None:
    """Taken and never leased (killed in between), or leased and the lease expired (killed
    while running it): the message itself goes back to its queue, after a whole lease, and
    the shard is not enqueued a second time."""
    job = store.create_job("doc-type", docs(12), tenant="acme")  # 3 shards
    store.recovery.enqueued(job.id)
    enqueue_shards(celery, job, [0, 1, 2], lanes=LANES)
    lane = bulk_lane("acme", LANES)
    for _ in range(3):
        take_and_die(url, lane)
    r = redis.Redis.from_url(url)
    assert r.llen(lane) == 0 and r.hlen("unacked") == 3
    now = time.time()
    store.recovery.hold(job.id, 1, now + LEASE_S)  # shard 1 was received: leased
    store.finish_shard(job.id, 2, [ok(i) for i in range(8, 12)])  # shard 2 done before ack
    assert restore_unleased(store, celery, popped_before=now - LEASE_S, now=now) == set()
    assert restore_unleased(store, celery, popped_before=now + 1, now=now) == {(job.id, 0)}
    assert r.llen(lane) == 1 and r.hlen("unacked") == 2
    body = json.loads(r.lindex(lane, 0))
    assert shard_of(body) == (job.id, 0) and body["headers"]["redelivered"] is True
    assert restore_unleased(store, celery, popped_before=now + 1, now=now) == set()  # once
    # shard 1's worker dies too: its lease expires, and its own message comes back, once
    later = now + 2 * LEASE_S
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=later) == 1
    assert r.llen(lane) == 2 and r.hlen("unacked") == 1  # shard 2's stays: it is done
    assert store.recovery.held() == {}
    assert sweep(store, celery, lanes=LANES, lease_s=LEASE_S, now=later + 1) == 0


# --- audits: messages lost between BRPOP and kombu's unacked hash ---------------------


def lost_in_transit(url: str, queue: str) -> tuple[str, int]:
    """What BRPOP does for a worker killed before it read the reply: the message leaves
    its queue and is recorded nowhere."""
    raw = redis.Redis.from_url(url).rpop(queue)
    assert raw is not None
    shard = shard_of(json.loads(raw))
    assert shard is not None
    return shard


def queued_shards(url: str, queue: str) -> list[tuple[str, int]]:
    raws = redis.Redis.from_url(url).lrange(queue, 0, -1)
    return sorted(s for raw in raws if (s := shard_of(json.loads(raw))))


def test_a_shard_found_nowhere_at_two_audits_is_enqueued_again_once(
    store: JobStore, celery: Celery, url: str
) -> None:
    """Of five shards, one waits in its queue, one is unacknowledged (its worker died after
    kombu recorded it), one is leased, one is done and one was lost in transit: only the
    last is enqueued again, and only when the next audit finds it missing still."""
    job = store.create_job("doc-type", docs(20), tenant="acme")  # 5 shards
    store.recovery.enqueued(job.id)
    lane = bulk_lane("acme", LANES)
    enqueue_shards(celery, job, range(5), lanes=LANES)
    lost = lost_in_transit(url, lane)  # the oldest: shard 0
    take_and_die(url, lane)  # shard 1, unacknowledged
    store.recovery.hold(job.id, 2, time.time() + LEASE_S)  # shard 2's message, taken...
    assert lost_in_transit(url, lane) == (job.id, 2)  # ...and leased on receipt
    store.finish_shard(job.id, 3, [ok(i) for i in range(12, 16)])
    assert lost_in_transit(url, lane) == (job.id, 3)  # done, and acknowledged
    assert queued_shards(url, lane) == [(job.id, 4)]
    t0 = time.time()

    def audit_at(t: float) -> int:
        return audit(store, celery, every_s=EVERY_S, now=t, lanes=LANES)

    assert audit_at(t0) == 0  # not due: created less than an audit ago
    assert audit_at(t0 + EVERY_S) == 0  # found missing once: it may be in flight
    assert audit_at(t0 + EVERY_S + 1) == 0  # not due again yet
    assert audit_at(t0 + 2 * EVERY_S) == 1
    assert queued_shards(url, lane) == sorted([lost, (job.id, 4)])
    assert audit_at(t0 + 3 * EVERY_S) == 0  # its new message is there: once


def test_a_shard_missing_at_one_audit_only_is_left_alone(
    store: JobStore, celery: Celery, url: str
) -> None:
    """Missing at one audit and leased by the next (its message was on its way to a live
    worker), or missing from a job whose shards are not enqueued yet (the sweeper's):
    nothing is enqueued. A job found final is audited no more."""
    job = store.create_job("doc-type", docs(8), tenant="acme")  # 2 shards
    waiting = store.create_job("doc-type", docs(4), tenant="acme")  # never enqueued
    store.recovery.enqueued(job.id)
    lane = bulk_lane("acme", LANES)
    enqueue_shards(celery, job, [0, 1], lanes=LANES)
    assert lost_in_transit(url, lane) == (job.id, 0)
    t0 = time.time()
    assert audit(store, celery, every_s=EVERY_S, now=t0 + EVERY_S, lanes=LANES) == 0
    store.recovery.hold(job.id, 0, t0 + 10 * EVERY_S)  # it reached its worker after all
    assert audit(store, celery, every_s=EVERY_S, now=t0 + 2 * EVERY_S, lanes=LANES) == 0
    assert queued_shards(url, lane) == [(job.id, 1)]
    r = redis.Redis.from_url(url)
    assert r.hlen(f"docq:job:{{{job.id}}}:missing") == 0  # forgotten, not just unconfirmed
    for n, first in ((0, 0), (1, 4)):
        store.finish_shard(job.id, n, [ok(i) for i in range(first, first + 4)])
    audit(store, celery, every_s=EVERY_S, now=t0 + 3 * EVERY_S, lanes=LANES)
    assert r.zscore("docq:active", job.id) is None
    assert r.zscore("docq:active", waiting.id) is not None
    assert queued_shards(url, lane) == [(job.id, 1)]


def final_with_a_webhook(store: JobStore) -> str:
    """A one-shard job made final, its event opened and never dispatched: what a worker
    killed between the two, or one whose dispatch the broker refused, leaves."""
    hook = WebhookTarget("https://hooks.example/docq", "whsec_" + "a" * 32)
    job = store.create_job("doc-type", docs(4), tenant="acme", webhook=hook)
    store.recovery.enqueued(job.id)
    assert store.finish_shard(job.id, 0, [ok(i) for i in range(4)]).performed
    return job.id


def deliveries(url: str) -> list[tuple[str, str]]:
    raws = redis.Redis.from_url(url).lrange(WEBHOOKS_QUEUE, 0, -1)
    return [d for raw in raws if (d := delivery_of(json.loads(raw)))]


def test_a_final_job_whose_event_was_never_enqueued_gets_it_at_its_second_audit(
    store: JobStore, celery: Celery, url: str
) -> None:
    """The event is enqueued once, as a new chain; the job stays audited until the event
    is settled, then is audited no more."""
    job_id = final_with_a_webhook(store)
    t0 = time.time()

    def audit_at(t: float) -> int:
        return audit(store, celery, every_s=EVERY_S, now=t, lanes=LANES)

    assert audit_at(t0 + EVERY_S) == 0  # found once: its worker may be enqueueing it
    assert deliveries(url) == []
    assert audit_at(t0 + 2 * EVERY_S) == 1
    [(queued_for, token)] = deliveries(url)
    assert (queued_for, token) == (job_id, store.deliveries.dispatch_state(job_id)[1])
    assert audit_at(t0 + 3 * EVERY_S) == 0  # its message is queued: once
    assert audit_at(t0 + 4 * EVERY_S) == 0
    assert len(deliveries(url)) == 1
    r = redis.Redis.from_url(url)
    assert r.zscore(keys.active(), job_id) is not None  # pending: still audited
    r.hset(keys.webhook(job_id), "state", "delivered")
    audit_at(t0 + 5 * EVERY_S)
    assert r.zscore(keys.active(), job_id) is None


@pytest.mark.parametrize("where", ["queued", "unacknowledged", "lost"])
def test_a_pending_events_message_is_enqueued_again_only_when_lost(
    store: JobStore, celery: Celery, url: str, where: str
) -> None:
    """A chain whose message waits in its queue or is held unacknowledged (a retry's
    countdown) is left alone; one lost in transit (or to a retry whose publish failed) is
    enqueued again under its own token at the second audit that finds it nowhere."""
    job_id = final_with_a_webhook(store)
    enqueue_webhook(celery, job_id, "chain-1")
    store.deliveries.set_token_if_unset(job_id, "chain-1")
    if where == "unacknowledged":
        take_and_die(url, WEBHOOKS_QUEUE)
    elif where == "lost":
        assert redis.Redis.from_url(url).rpop(WEBHOOKS_QUEUE) is not None
    before = deliveries(url)
    t0 = time.time()
    audit(store, celery, every_s=EVERY_S, now=t0 + EVERY_S, lanes=LANES)
    assert deliveries(url) == before  # a lost one may be in flight: nothing yet
    for k in (2, 3):
        audit(store, celery, every_s=EVERY_S, now=t0 + k * EVERY_S, lanes=LANES)
    r = redis.Redis.from_url(url)
    expected = [] if where == "unacknowledged" else [(job_id, "chain-1")]
    assert deliveries(url) == expected
    assert r.hlen("unacked") == (1 if where == "unacknowledged" else 0)


def test_an_audit_reads_a_long_queue_page_by_page(
    store: JobStore, celery: Celery, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every shard of a queue longer than a page is seen, so none is enqueued twice."""
    from workers import audit as audit_module

    monkeypatch.setattr(audit_module, "PAGE", 2)
    job = store.create_job("doc-type", docs(28), tenant="acme")  # 7 shards
    store.recovery.enqueued(job.id)
    enqueue_shards(celery, job, range(7), lanes=LANES)
    t0 = time.time()
    for k in (1, 2):
        assert audit(store, celery, every_s=EVERY_S, now=t0 + k * EVERY_S, lanes=LANES) == 0
    assert len(queued_shards(url, bulk_lane("acme", LANES))) == 7


def test_an_event_waiting_in_the_retry_schedule_is_left_to_it(
    store: JobStore, celery: Celery, url: str
) -> None:
    """After a failed attempt the event has no message on purpose (the sweeper enqueues it
    when due, workers/retries.py): the audits neither call it lost nor enqueue it."""
    job_id = final_with_a_webhook(store)
    store.deliveries.set_token_if_unset(job_id, "chain-1")
    assert store.deliveries.claim_attempt(job_id, "chain-1", 12.0)[0] == "claimed"
    failed = Attempt(1, datetime.now(UTC), 5.0, 503, "HTTP 503")
    assert store.deliveries.finish_attempt(job_id, "chain-1", failed, DeliveryState.PENDING, 600)
    t0 = time.time()
    for k in (1, 2, 3):
        assert audit(store, celery, every_s=EVERY_S, now=t0 + k * EVERY_S, lanes=LANES) == 0
    assert deliveries(url) == []
