"""A shard worker whose consumer stops reading while its queue waits reads again
(workers/stall.py), and the job completes with every document answered once; one that a
new connection does not cure shuts down, for its supervisor to start it afresh.

The stall is the one Celery's Redis consumer is reported to fall into after a lost
connection (celery/celery#8030, #10302): a QoS credit that is never given back, after which
kombu stops issuing BRPOP for good. The workers here run with kombu's Redis QoS patched (a
sitecustomize on their PYTHONPATH): the first acknowledges each message in Redis and keeps
its credit, so it stalls once it has taken as many tasks as its prefetch allows, and only a
new connection (a new channel and QoS) makes it read again: with the guard off it holds the
job forever (8 of 24 documents). The second never has credit at all.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from corpus.doc_type import generate
from devstack.services import api_server, celery_worker, redis_server
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY, settings_env, tenant_headers
from tests.test_e2e import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

QOS = "from kombu.transport import redis as transport\n\n"
# Acknowledged in Redis, and the credit kept.
LEAKS_CREDIT = (
    QOS + "transport.QoS.ack = lambda self, tag: self._remove_from_indices(tag).execute()\n"
)
NO_CREDIT = QOS + "transport.QoS.can_consume = lambda self: False\n"

DOCS = [{"id": d.id, "text": d.text[:200]} for d in generate(24, seed=5)]


def patched(tmp_path: Path, env: dict[str, str], source: str) -> dict[str, str]:
    """`env` with a sitecustomize that patches kombu as `source` says."""
    folder = tmp_path / "patch"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(source)
    return {**env, "PYTHONPATH": str(folder)}


def stack_settings(redis_url: str, triton_url: str, stall_s: float) -> Settings:
    return Settings(
        redis_url=redis_url,
        triton_grpc_url=triton_url,
        model_repository=MODEL_REPOSITORY,
        shard_size=4,  # 6 shards; the worker's prefetch is 2
        worker_stall_s=stall_s,
    )


@pytest.mark.timeout(300)
def test_a_consumer_that_stops_reading_is_reconnected_and_the_job_completes(
    tmp_path: Path, triton_url: str
) -> None:
    log = tmp_path / "worker.log"
    with redis_server(tmp_path / "redis") as redis_url:
        s = stack_settings(redis_url, triton_url, stall_s=2)
        env = settings_env(s)
        with (
            celery_worker(patched(tmp_path, env, LEAKS_CREDIT), log, "cpu", concurrency=2),
            api_server(env, tmp_path / "api.log") as url,
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=30) as api,
        ):
            created = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS})
            assert created.status_code == 202, created.text
            job, _ = wait_until_final(api, created.json()["id"], timeout=240)  # type: ignore[arg-type]
            results = all_results(api, job["id"])  # type: ignore[arg-type]
    text = log.read_text()
    assert job["status"] == "succeeded", job
    assert sorted(r["id"] for r in results) == sorted(d["id"] for d in DOCS)  # each once
    assert "reconnecting to the broker" in text
    assert "shutting down to be restarted" not in text  # a reconnection was enough


@pytest.mark.timeout(300)
def test_a_consumer_a_reconnection_does_not_cure_shuts_its_worker_down(
    tmp_path: Path, triton_url: str
) -> None:
    log = tmp_path / "worker.log"
    with redis_server(tmp_path / "redis") as redis_url:
        s = stack_settings(redis_url, triton_url, stall_s=1)
        env = settings_env(s)
        with (
            celery_worker(patched(tmp_path, env, NO_CREDIT), log, "cpu", concurrency=2) as proc,
            api_server(env, tmp_path / "api.log") as url,
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=30) as api,
        ):
            created = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS})
            assert created.status_code == 202, created.text
            try:
                proc.wait(120)  # it ends itself: nothing here stops it before
            except subprocess.TimeoutExpired:
                pytest.fail(f"the stalled worker is still running (log: {log})")
            job = api.get(f"/v1/jobs/{created.json()['id']}").json()
    text = log.read_text()
    assert text.index("reconnecting to the broker") < text.index("shutting down to be restarted")
    assert job["progress"]["documents_done"] == 0  # it never read: the job waits for a worker
