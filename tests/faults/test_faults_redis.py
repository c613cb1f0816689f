"""redis-server is killed (SIGKILL) in the middle of a 600-document job and started again on
the same data directory and port: every job answered 202 before the crash completes, each
document answered once with the labels of a fault-free run, and while Redis is down the API
answers 503 JSON promptly (no hang, no 500).

Redis runs as make up's: an append-only file fsynced at every write (devstack/stack.py), so
what Redis acknowledged before the kill is on disk when it starts again.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest
import redis

from devstack.services import api_server, celery_worker, free_port, redis_server
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import FAULT_DOCUMENTS as DOCUMENTS
from tests.conftest import MODEL_REPOSITORY, fault_documents, settings_env, tenant_headers
from tests.support.jobs import all_results, assert_unavailable, wait_until_final
from tests.support.polling import until

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

OUTAGE_S = 10


def kill_redis(url: str) -> None:
    pid = redis.Redis.from_url(url).info("server")["process_id"]
    os.kill(pid, signal.SIGKILL)
    until(lambda: not redis_answers(url), "the killed Redis to stop answering", 30)


def redis_answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except redis.RedisError:
        return False


@pytest.mark.timeout(1200)
def test_a_redis_crash_mid_job_loses_no_accepted_job_and_the_api_answers_503(
    tmp_path: Path, triton_url: str, fault_free_labels: list[tuple[str, str]]
) -> None:
    data, port = tmp_path / "redis", free_port()
    docs = fault_documents()
    upload = {"model": "doc-type", "documents": docs}
    with redis_server(data, port=port) as redis_url:
        s = Settings(
            redis_url=redis_url,
            triton_grpc_url=triton_url,
            model_repository=MODEL_REPOSITORY,
            shard_size=8,
            task_retry_backoff_s=1,
        )
        store = JobStore.from_url(redis_url, shard_size=s.shard_size, ttl_s=3600)
        env = settings_env(s)
        with (
            celery_worker(env, tmp_path / "worker.log", "cpu", concurrency=4),
            api_server(env, tmp_path / "api.log") as url,
            # The timeout is the promise: a request that hangs raises, and fails the test.
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=2.0) as api,
        ):
            created = api.post("/v1/jobs", json=upload)
            assert created.status_code == 202, created.text
            job_id = created.json()["id"]
            until(lambda: store.get_job(job_id).documents_done >= 64, "64 documents", 600)
            done = store.get_job(job_id).documents_done
            kill_redis(redis_url)
            assert done < DOCUMENTS  # the crash came mid-job

            outage_ends = time.monotonic() + OUTAGE_S
            while time.monotonic() < outage_ends:
                assert_unavailable(api.get(f"/v1/jobs/{job_id}"))
                assert_unavailable(api.get(f"/v1/jobs/{job_id}/results"))
                assert_unavailable(api.post("/v1/jobs", json={"documents": docs[:3]}))
                assert_unavailable(api.get("/readyz"))
                time.sleep(0.5)

            with redis_server(data, port=port):  # the same AOF, at the same address
                job, _ = wait_until_final(api, job_id, timeout=600)  # type: ignore[arg-type]
                assert job["status"] == "succeeded"
                assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": 0}
                results = all_results(api, job_id, limit=200)  # type: ignore[arg-type]
                assert [(r["id"], r["label"]) for r in results] == fault_free_labels
                assert store.answers(job_id) == dict.fromkeys(range(DOCUMENTS), 1)
