"""An extract worker SIGKILLed mid-shard loses no file and answers no document twice.

The extract pool reads files in Celery's thread pool, so a kill takes the process with the
shards it was reading. Their messages stay unacknowledged until the visibility timeout (left
at its hour here, so it cannot be what recovers them): the shard's lease stops being renewed
and a sweeper (a thread in every shard worker, the bulk worker's here too) brings the shard
back to the extract queue; the files are still referenced in Redis and their blobs in the
blob store, since a reference is only deleted in the write that stores its text (and the
blob after it). In the end no blob is left in the store. A queued extract message is also
lost outright (as a kill in BRPOP's instant loses one): the audits find its shard in no
queue and enqueue it again. Answered once is counted by the job store's ledger.
"""

from __future__ import annotations

import base64
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from devstack.services import celery_worker, redis_server, wait_for
from docq.config import Settings
from docq.queue import EXTRACT_QUEUE
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import INVOICE, pdf
from tests.support.jobs import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

FILES = 48  # six shards of eight
PAGES = 50  # a shard takes about a second to read: a kill lands inside one


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
                "blob_url": (tmp_path / "blobs").as_uri(),
                "blob_orphan_grace_s": 10.0,  # longer than storing the upload takes
                "blob_sweep_interval_s": 1.0,
            }
        )


def shard_being_read(store: JobStore, job_id: str, timeout: float = 120) -> int:
    """Once a shard of the job has been read, a leased shard whose files are still pending:
    the one a kill now interrupts."""
    deadline = time.monotonic() + timeout
    job = store.get_job(job_id)
    while time.monotonic() < deadline:
        leased = sorted(n for j, n in store.recovery.held() if j == job_id)
        shards = {n: store.load_shard(job, n) for n in range(job.shards)}
        read = [n for n, docs in shards.items() if not any(d.pending for d in docs)]
        running = [n for n in leased if any(d.pending for d in shards[n])]
        if read and running:
            return running[0]
        time.sleep(0.01)
    raise TimeoutError(f"no shard of job {job_id} being read after another was")


@pytest.mark.timeout(900)
def test_an_extract_worker_killed_mid_shard_loses_no_file_and_answers_once(
    crash_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    env = settings_env(crash_settings)
    store = JobStore.from_url(crash_settings.redis_url, shard_size=8, ttl_s=3600)
    data = base64.b64encode(pdf(*[INVOICE] * PAGES)).decode()
    docs = [
        {"id": f"f{i:02d}.pdf", "content": data, "content_type": "application/pdf"}
        for i in range(FILES)
    ]
    with (
        TestClient(create_app(crash_settings), headers=tenant_headers(crash_settings)) as api,
        celery_worker(env, tmp_path / "bulk.log", "cpu,cpu-priority", "bulk", concurrency=4),
    ):
        with celery_worker(env, tmp_path / "victim.log", "extract", "victim") as victim:
            created = api.post("/v1/jobs", json={"documents": docs}).json()
            running = shard_being_read(store, created["id"])
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(timeout=30)
        job = store.get_job(created["id"])
        assert any(d.pending for d in store.load_shard(job, running)), "it finished first"
        # a kill in BRPOP's instant: the oldest queued message leaves Redis, recorded nowhere
        assert redis.Redis.from_url(crash_settings.redis_url).rpop(EXTRACT_QUEUE) is not None
        # the next worker starts at once, as a supervisor would start one
        with celery_worker(env, tmp_path / "next.log", "extract", "next", concurrency=2):
            final, _ = wait_until_final(api, created["id"], timeout=600)

        assert final["status"] == "succeeded"
        assert final["progress"] == {"documents_done": FILES, "documents_failed": 0}
        results = all_results(api, created["id"], limit=100)
        assert [r["id"] for r in results] == [d["id"] for d in docs]  # each once, in order
        assert {(r["pages"], r["extraction"], r["label"]) for r in results} == {
            (PAGES, "text", results[0]["label"])
        }
        # every document's result was written exactly once, the interrupted shard's included
        assert store.answers(created["id"]) == dict.fromkeys(range(FILES), 1)
        logs = "".join((tmp_path / n).read_text(errors="replace") for n in ("bulk.log", "next.log"))
        assert "lease expired" in logs or "its worker was lost holding its message" in logs
        assert "were in no queue, unacknowledged message or lease" in logs  # the audits'
        assert store.recovery.held() == {}
        assert all(store.files.load(created["id"], i) is None for i in range(FILES))
        blobs = tmp_path / "blobs"
        wait_for(lambda: not any(p.is_file() for p in blobs.rglob("*")), 60, "no blob left")
