"""A bulk worker SIGKILLed three times mid-shard loses no document and answers none twice.

Shard workers run Celery's thread pool, so a kill takes the whole process with the shards
it was running. Their messages stay unacknowledged in Redis until the visibility timeout
(left at its hour here, so it cannot be what recovers them): the shards come back because
their leases stop being renewed and a sweeper (workers/sweeper.py, a thread in every shard
worker) enqueues them again, or, for a message popped in the instant before its lease was
taken, puts it back in its queue. A kill also lands, now and then, between the BRPOP that
takes a message out of its queue and kombu's record of it: that message is nowhere, and
the audits (workers/audit.py) enqueue its shard again; the test loses one message that way
on purpose too, so that every run covers it. Each kill is followed at once by a new worker,
as a supervisor would start one.

Answered once is counted, not inferred from the results (a hash keyed by position, where
an overwrite is invisible): the job store counts every write of every document's result.
The labels are compared with a fault-free run of the same documents.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.services import celery_worker, redis_server
from docq.config import Settings
from docq.queue import bulk_lane
from docq.store import JobStore
from tests.conftest import TENANT, settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

DOCUMENTS = 600
KILLS = 3


@pytest.fixture
def crash_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    """The session's settings on a Redis of its own (no other worker takes these shards),
    with short leases and audits; the visibility timeout stays at its default hour."""
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(
            update={
                "redis_url": redis_url,
                "shard_lease_s": 4.0,
                "sweep_interval_s": 1.0,
                "audit_interval_s": 2.0,
            }
        )


def shard_in_flight(
    store: JobStore, job_id: str, done_at_least: int, timeout: float = 300
) -> set[int]:
    """Once the job has `done_at_least` documents done, the shards that hold a lease and
    have no results yet: the ones a kill now would interrupt."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = store.get_job(job_id)
        if job.documents_done >= done_at_least:
            done = store.completed_shards(job_id)
            running = {n for j, n in store.recovery.held() if j == job_id and n not in done}
            if running:
                return running
        time.sleep(0.02)
    raise TimeoutError(f"no shard of job {job_id} in flight with {done_at_least} done")


def labels(results: list[dict[str, object]]) -> dict[object, object]:
    return {r["id"]: r.get("label") for r in results}


@pytest.mark.timeout(1800)  # two runs of 600 documents and four worker starts
def test_a_bulk_worker_killed_three_times_mid_shard_loses_nothing_and_answers_once(
    crash_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    env = settings_env(crash_settings)
    store = JobStore.from_url(crash_settings.redis_url, shard_size=8, ttl_s=3600)
    # one window each (the first 600 characters), to keep two runs of 600 inside the budget
    docs = [{"id": d.id, "text": d.text[:600]} for d in generate(DOCUMENTS, seed=31)]
    headers = tenant_headers(crash_settings)
    with TestClient(create_app(crash_settings), headers=headers) as api:
        with celery_worker(env, tmp_path / "reference.log", "cpu", "reference", concurrency=4):
            reference = api.post("/v1/jobs", json={"documents": docs}).json()
            job, _ = wait_until_final(api, reference["id"], timeout=900)
        assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
        expected = labels(all_results(api, reference["id"], limit=200))

        created = api.post("/v1/jobs", json={"documents": docs}).json()
        for kill in range(KILLS):
            log = tmp_path / f"victim-{kill}.log"
            with celery_worker(env, log, "cpu", f"victim{kill}", concurrency=4) as victim:
                # a little further into the job each time, with a shard running
                running = shard_in_flight(store, created["id"], 8 * (kill + 1) * 8)
                os.kill(victim.pid, signal.SIGKILL)
                victim.wait(timeout=30)
            still = running - store.completed_shards(created["id"])
            assert still, "the shards running at the kill finished before it"
            # the next worker starts at once, as a supervisor would start one
        # a kill in BRPOP's instant: the oldest queued message leaves Redis, recorded nowhere
        lane = bulk_lane(TENANT, crash_settings.bulk_lanes)
        assert redis.Redis.from_url(crash_settings.redis_url).rpop(lane) is not None

        with celery_worker(env, tmp_path / "last.log", "cpu", "last", concurrency=4):
            job, _ = wait_until_final(api, created["id"], timeout=900)
        assert job["status"] == "succeeded"
        assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
        results = all_results(api, created["id"], limit=200)
        assert [r["id"] for r in results] == [d["id"] for d in docs]  # each once, in order
        assert labels(results) == expected
        # every document's result was written exactly once, the interrupted ones included
        assert store.answers(created["id"]) == dict.fromkeys(range(DOCUMENTS), 1)
        # recovered by the sweeper, not only by the visibility timeout
        swept = "".join(
            (tmp_path / name).read_text(errors="replace")
            for name in ("victim-1.log", "victim-2.log", "last.log")
        )
        assert "lease expired" in swept
        assert "were in no queue, unacknowledged message or lease" in swept
        assert store.recovery.held() == {}
