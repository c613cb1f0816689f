"""docq.queue: which queue a job's shards take, and the broker behaviour the tenant lanes
rely on (kombu's Redis transport taking a consumer's queues in turn), against a real
redis-server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kombu import Consumer, Message, Queue

from devstack.services import REPO, redis_server
from docq.config import Settings
from docq.jobs import JobRecord, JobStatus
from docq.queue import (
    CPU_QUEUE,
    PRIORITY_QUEUE,
    PROCESS_SHARD,
    WEBHOOKS_QUEUE,
    bulk_lane,
    bulk_lanes,
    consumed_queues,
    make_celery,
    shard_queue,
)


def record(tenant: str, *, priority: bool = False) -> JobRecord:
    return JobRecord(
        id="j1",
        model="doc-type",
        status=JobStatus.QUEUED,
        documents=100,
        shards=2,
        shard_size=64,
        documents_done=0,
        documents_failed=0,
        created_at=datetime.now(UTC),
        started_at=None,
        finished_at=None,
        error=None,
        priority=priority,
        tenant=tenant,
    )


def test_a_tenants_lane_is_the_same_in_every_process() -> None:
    """Not Python's salted hash: the API, the sweeper and a restarted process agree."""
    tenants = [f"tenant-{i}" for i in range(20)]
    here = [bulk_lane(t, 8) for t in tenants]
    code = f"from docq.queue import bulk_lane; print([bulk_lane(t, 8) for t in {tenants!r}])"
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == repr(here)


def test_tenants_spread_over_every_lane() -> None:
    lanes = Counter(bulk_lane(f"customer-{i}", 8) for i in range(800))
    assert set(lanes) == set(bulk_lanes(8))
    assert min(lanes.values()) > 60  # 100 each if even


def test_small_jobs_keep_their_lane_and_bulk_jobs_take_their_tenants() -> None:
    assert shard_queue(record("acme", priority=True), 8) == PRIORITY_QUEUE
    assert shard_queue(record("acme"), 8) == bulk_lane("acme", 8)
    assert shard_queue(record("acme"), 1) == f"{CPU_QUEUE}.0"


def test_a_bulk_worker_consumes_every_lane() -> None:
    assert consumed_queues([CPU_QUEUE, PRIORITY_QUEUE], 3) == [
        CPU_QUEUE,
        "cpu.0",
        "cpu.1",
        "cpu.2",
        PRIORITY_QUEUE,
    ]
    assert consumed_queues([WEBHOOKS_QUEUE], 3) == [WEBHOOKS_QUEUE]


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as url:
        yield url


def test_the_broker_takes_a_consumers_lanes_in_turn(url: str) -> None:
    """What fairness rests on: one tenant's backlog in one lane, another's two messages in
    another; a consumer with prefetch 1 gets them alternately, not the backlog first."""
    app = make_celery(Settings(redis_url=url))
    backlog, other = "cpu.0", "cpu.1"
    for i in range(4):
        app.send_task(PROCESS_SHARD, args=["a", i], queue=backlog)
    for i in range(2):
        app.send_task(PROCESS_SHARD, args=["b", i], queue=other)

    order: list[str] = []

    def take(body: object, message: Message) -> None:
        order.append(message.delivery_info["routing_key"])
        message.ack()

    with app.connection_for_read() as conn:
        queues = [Queue(backlog), Queue(other)]  # the backlog's lane polled first
        with Consumer(conn, queues, callbacks=[take], prefetch_count=1, accept=["json"]):
            while len(order) < 6:
                conn.drain_events(timeout=10)
    assert order == [backlog, other, backlog, other, backlog, backlog]
