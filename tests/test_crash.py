"""A crash of a worker process in the middle of a job loses no document and answers none twice.

Shard workers run Celery's thread pool, so a crash takes the whole process with the shards
it held, running or prefetched. Those stay unacknowledged in Redis, and a worker hands them
out again once they are older than the visibility timeout: here a replacement worker with
a short one (4 s) stands in for the supervisor that restarts a crashed process.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.services import celery_worker, redis_server
from docq.config import Settings
from tests.conftest import settings_env, tenant_headers
from tests.test_e2e import all_results, wait_until_final

pytestmark = pytest.mark.integration


@pytest.fixture
def crash_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    """The session's settings on a Redis of its own (no other worker takes these shards)."""
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(update={"redis_url": redis_url, "visibility_timeout_s": 4})


def test_killed_worker_mid_job_loses_no_document_and_answers_none_twice(
    crash_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    env = settings_env(crash_settings)
    docs = [{"id": d.id, "text": d.text} for d in generate(120, seed=31)]
    with TestClient(create_app(crash_settings), headers=tenant_headers(crash_settings)) as api:
        with celery_worker(env, tmp_path / "victim.log", "cpu", "victim", concurrency=4) as victim:
            created = api.post("/v1/jobs", json={"documents": docs}).json()
            # wait until the worker is inside the job (a shard done, most not), then kill it
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                job = api.get(f"/v1/jobs/{created['id']}").json()
                if job["progress"]["documents_done"] >= 8:
                    break
                time.sleep(0.05)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(timeout=30)
        done_at_kill = api.get(f"/v1/jobs/{created['id']}").json()["progress"]["documents_done"]
        assert 8 <= done_at_kill < len(docs)

        with celery_worker(env, tmp_path / "replacement.log", "cpu", "replacement", concurrency=4):
            job, _ = wait_until_final(api, created["id"], timeout=300)
        assert job["status"] == "succeeded"
        assert job["progress"] == {"documents_done": 120, "documents_failed": 0}
        results = all_results(api, created["id"], limit=50)
        assert [r["id"] for r in results] == [d["id"] for d in docs]  # each once, in order
        assert all("label" in r for r in results)
