"""Two real tritonservers behind one worker: one is killed (SIGKILL) at a third of a
600-document job and started again at two thirds; the job finishes with every document
answered once and none failed, and both servers' own statistics show they served batches.

The worker sends each batch to the server with the fewest requests in flight; the batches
in flight on the killed server fail as its connections drop and go to the other one. Its
health check (every 0.5 s here) takes the restarted server back, which a second job then
shows through the restarted server's statistics.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import tritonclient.grpc as grpcclient
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from corpus.doc_type import generate
from devstack.services import celery_worker, free_port, redis_server, triton_server
from docq.config import Settings
from tests.conftest import MODEL_REPOSITORY, settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

MODEL = "doc-type"
N = 600


def served(url: str) -> int:
    """Inference requests Triton at `url` answered for the model (its own statistics)."""
    client = grpcclient.InferenceServerClient(url)
    try:
        stats = client.get_inference_statistics(MODEL, as_json=True)["model_stats"]
        return sum(int(s["inference_stats"]["success"].get("count", 0)) for s in stats)
    finally:
        client.close()


def server_pid(grpc_port: int) -> int:
    """The tritonserver process listening on `grpc_port` (the launcher execs into it)."""
    for proc in psutil.process_iter(["cmdline"]):
        if f"--grpc-port={grpc_port}" in (proc.info["cmdline"] or []):
            return int(proc.pid)
    raise LookupError(f"no tritonserver on gRPC port {grpc_port}")


def worker_metric(port: int, name: str, **labels: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and labels.items() <= s.labels.items():
                return float(s.value)
    return 0.0


def progress(api: TestClient, job_id: str) -> int:
    return int(api.get(f"/v1/jobs/{job_id}").json()["progress"]["documents_done"])


def wait(check: Any, what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    with redis_server(tmp_path / "redis") as url:
        yield url


def stubs_of(server: int) -> list[psutil.Process]:
    """Python-backend stubs started by the tritonserver of pid `server` (their arguments
    name it), alive or orphaned."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        args = p.info["cmdline"] or []
        stub = bool(args) and args[0].endswith("triton_python_backend_stub")
        if stub and str(server) in args and p.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(p)
    return found


@pytest.mark.timeout(1800)  # three tritonserver starts and 700 documents on a busy box
def test_a_killed_triton_loses_no_document_and_is_taken_back_after_its_restart(
    redis_url: str, tmp_path: Path
) -> None:
    from api.main import create_app

    # Short documents (one short window each): the job is about failover, not long texts.
    docs = [{"id": f"f{i:03d}", "text": d.text[:400]} for i, d in enumerate(generate(N, 77))]
    a_ports = (free_port(), free_port(), free_port())
    metrics_port = free_port()
    with (
        triton_server(MODEL_REPOSITORY, tmp_path / "triton-a.log", ports=a_ports) as url_a,
        triton_server(MODEL_REPOSITORY, tmp_path / "triton-b.log") as url_b,
    ):
        s = Settings(
            redis_url=redis_url,
            triton_grpc_urls=f"{url_a},{url_b}",
            triton_health_interval_s=0.5,
            model_repository=MODEL_REPOSITORY,
            shard_size=20,  # 30 shards: progress moves in steps of 20 documents
            task_retry_backoff_s=1,
        )
        env = {**settings_env(s), "DOCQ_WORKER_METRICS_PORT": str(metrics_port)}
        start_a, start_b = served(url_a), served(url_b)  # warm-up requests, if counted
        with (
            TestClient(create_app(s), headers=tenant_headers(s)) as api,
            celery_worker(env, tmp_path / "worker.log", "cpu", concurrency=4),
        ):
            job_id = api.post("/v1/jobs", json={"documents": docs}).json()["id"]

            wait(lambda: progress(api, job_id) >= N // 3, "a third of the job")
            before_kill_a = served(url_a)
            killed = server_pid(a_ports[1])
            assert stubs_of(killed), "the check below would prove nothing"
            os.kill(killed, signal.SIGKILL)
            wait(
                lambda: worker_metric(metrics_port, "docq_triton_endpoint_up", endpoint=url_a) == 0,
                "a left",
            )

            wait(lambda: progress(api, job_id) >= 2 * N // 3, "two thirds of the job")
            done_at_restart = progress(api, job_id)
            with triton_server(MODEL_REPOSITORY, tmp_path / "triton-a2.log", ports=a_ports):
                restarted_a = served(url_a)
                job, _ = wait_until_final(api, job_id, timeout=300)
                wait(
                    lambda: (
                        worker_metric(metrics_port, "docq_triton_endpoint_up", endpoint=url_a) == 1
                    ),
                    "a taken back",
                )
                # a second job: the restarted server shares the load again
                again = api.post("/v1/jobs", json={"documents": docs[:96]}).json()["id"]
                second, _ = wait_until_final(api, again, timeout=300)
                after_a = served(url_a)
            results = all_results(api, job_id, limit=1000)
            errors_at_a = worker_metric(
                metrics_port, "docq_triton_request_errors_total", endpoint=url_a, model=MODEL
            )
        final_b = served(url_b)
    # the killed server's Python-backend stubs, orphaned by the SIGKILL, went with its group
    wait(lambda: not stubs_of(killed), "the killed server's stubs to end", timeout=20)

    assert N // 3 <= done_at_restart < N, "the restart came before the job's end"
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"documents_done": N, "documents_failed": 0}
    assert [r["id"] for r in results] == [d["id"] for d in docs]  # each once, in order
    assert all("label" in r and "error" not in r for r in results)
    assert second["status"] == "succeeded" and second["progress"]["documents_failed"] == 0
    # both servers served batches: a before it was killed and again after its restart
    assert before_kill_a > start_a
    assert after_a > restarted_a
    assert final_b > start_b
    # requests did fail at a (refused or cut off), and went to b: no document failed, and
    # no shard even had to be retried by Celery
    assert errors_at_a > 0
    assert "retry: Retry in" not in (tmp_path / "worker.log").read_text()
