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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from corpus.doc_type import generate
from devstack.services import api_server, celery_worker, redis_server
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY, settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final
from workers.stall import EXIT_STALLED

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

QOS = "from kombu.transport import redis as transport\n\n"
# Acknowledged in Redis, and the credit kept.
LEAKS_CREDIT = (
    QOS + "transport.QoS.ack = lambda self, tag: self._remove_from_indices(tag).execute()\n"
)
NO_CREDIT = QOS + "transport.QoS.can_consume = lambda self: False\n"

DOCS = [{"id": d.id, "text": d.text[:200]} for d in generate(24, seed=5)]


@dataclass
class Stack:
    api: httpx.Client
    worker: subprocess.Popen
    job_id: str
    settings: Settings


@contextmanager
def stalling(tmp_path: Path, triton_url: str, patch: str, stall_s: float) -> Iterator[Stack]:
    """Redis, the API and one shard worker whose kombu is patched by `patch` (a
    sitecustomize on its PYTHONPATH), with a 24-document job (6 shards of 4; the worker's
    prefetch is 2) uploaded."""
    folder = tmp_path / "patch"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(patch)
    with redis_server(tmp_path / "redis") as redis_url:
        s = Settings(
            redis_url=redis_url,
            triton_grpc_url=triton_url,
            model_repository=MODEL_REPOSITORY,
            shard_size=4,
            worker_stall_s=stall_s,
        )
        env = settings_env(s)
        patched = {**env, "PYTHONPATH": str(folder)}
        with (
            celery_worker(patched, tmp_path / "worker.log", "cpu", concurrency=2) as worker,
            api_server(env, tmp_path / "api.log") as url,
            httpx.Client(base_url=url, headers=tenant_headers(s), timeout=30) as api,
        ):
            created = api.post("/v1/jobs", json={"model": "doc-type", "documents": DOCS})
            assert created.status_code == 202, created.text
            yield Stack(api, worker, created.json()["id"], s)


@pytest.mark.timeout(300)
def test_a_consumer_that_stops_reading_is_reconnected_and_the_job_completes(
    tmp_path: Path, triton_url: str
) -> None:
    with stalling(tmp_path, triton_url, LEAKS_CREDIT, stall_s=2) as stack:
        job, _ = wait_until_final(stack.api, stack.job_id, timeout=240)  # type: ignore[arg-type]
        results = all_results(stack.api, stack.job_id)  # type: ignore[arg-type]
    log = (tmp_path / "worker.log").read_text()
    assert job["status"] == "succeeded", job
    assert sorted(r["id"] for r in results) == sorted(d["id"] for d in DOCS)  # each once
    assert "reconnecting to the broker" in log
    assert "shutting down to be restarted" not in log  # a reconnection was enough


@pytest.mark.timeout(300)
def test_a_consumer_a_reconnection_does_not_cure_shuts_its_worker_down(
    tmp_path: Path, triton_url: str
) -> None:
    with stalling(tmp_path, triton_url, NO_CREDIT, stall_s=1) as stack:
        try:
            stack.worker.wait(120)  # it ends itself: nothing here stops it before
        except subprocess.TimeoutExpired:
            pytest.fail("the stalled worker is still running")
        job = stack.api.get(f"/v1/jobs/{stack.job_id}").json()
    log = (tmp_path / "worker.log").read_text()
    assert log.index("reconnecting to the broker") < log.index("shutting down to be restarted")
    assert job["progress"]["documents_done"] == 0  # it never read: the job waits for a worker


# Issue 41's end state, made on purpose: the first shard the worker takes never ends, and the
# consumer then stops on an error Celery does not recover from (as kombu's Sentinel
# transport raised AttributeError on a connection closed under it), so the worker's warm
# shutdown waits for that shard for ever: alive, silent, one task held, nothing read.
LOST_CONSUMER = """
import threading
from celery.signals import task_received
from workers import shard

_run_shard, _first = shard.run_shard, threading.Event()


def run_shard(*args, **kwargs):
    if not _first.is_set():
        _first.set()
        threading.Event().wait()  # never ends
    return _run_shard(*args, **kwargs)


shard.run_shard = run_shard


@task_received.connect
def _lose_the_consumer(sender=None, **_):
    def _raise():
        raise AttributeError("'NoneType' object has no attribute 'hostname'")

    sender.hub.call_soon(_raise)
"""


@pytest.mark.timeout(300)
def test_a_worker_whose_consumer_is_lost_with_a_task_stuck_exits_for_its_supervisor(
    tmp_path: Path, triton_url: str
) -> None:
    """It holds one task of the two it may, and reads nothing while shards wait: the guard
    reconnects, shuts it down, and, the shutdown waiting on the stuck task, exits; the worker
    its supervisor starts in its place finishes the job, every document answered once."""
    with stalling(tmp_path, triton_url, LOST_CONSUMER, stall_s=2) as stack:
        try:
            code = stack.worker.wait(120)  # nothing here stops it before
        except subprocess.TimeoutExpired:
            pytest.fail("the worker whose consumer is gone is still running")
        with celery_worker(
            settings_env(stack.settings), tmp_path / "next.log", "cpu", concurrency=2
        ):
            job, _ = wait_until_final(stack.api, stack.job_id, timeout=180)  # type: ignore[arg-type]
            results = all_results(stack.api, stack.job_id)  # type: ignore[arg-type]
    log = (tmp_path / "worker.log").read_text()
    assert "Unrecoverable error" in log  # the consumer was lost as intended
    assert code == EXIT_STALLED, log[-2000:]
    assert "its shutdown did not end it: exiting now" in log
    assert job["status"] == "succeeded", job
    assert sorted(r["id"] for r in results) == sorted(d["id"] for d in DOCS)  # each once
