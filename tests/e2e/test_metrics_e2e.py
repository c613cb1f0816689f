"""What Prometheus reads after a job, value by value: the API, a shard worker and the webhooks
worker (a prefork pool, counting in multiprocess mode), and the workers' JSON log lines.

A Redis of its own makes every count this job's: no other worker takes its shards, and the
workers started here count nothing else.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from devstack.services import celery_worker, free_port, redis_server
from docq.config import Settings
from tests.conftest import settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final
from tests.support.metrics import samples, value
from tests.support.receiver import Receiver

pytestmark = pytest.mark.e2e

MODEL = "doc-type"


@pytest.fixture
def own_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(update={"redis_url": redis_url, "log_format": "json"})


def test_every_metric_counts_the_job_and_every_log_line_names_it(
    own_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from api.main import create_app

    n_docs, shards = 20, 3  # shard_size 8
    docs = [{"id": f"m{i:02d}-{d.id}", "text": d.text} for i, d in enumerate(generate(n_docs, 5))]
    env = settings_env(own_settings)
    worker_port, hooks_port = free_port(), free_port()
    receiver = Receiver(503, 200)  # one attempt to retry, then delivered
    headers = tenant_headers(own_settings)
    caplog.set_level(logging.DEBUG)  # the API runs in-process: every record it logs
    with (
        TestClient(create_app(own_settings), headers=headers) as api,
        receiver.serve() as hook_url,
    ):
        assert api.get("/metrics", follow_redirects=False).status_code == 200
        before = samples(api.get("/metrics").text)
        created_before = before.get(("docq_jobs_created_total", frozenset({("model", MODEL)})), 0)

        created = api.post("/v1/jobs", json={"documents": docs, "webhook": {"url": hook_url}})
        assert created.status_code == 202, created.text
        job_id = created.json()["id"]
        # no worker yet: the shards wait in the queue, and the API reads them there
        queued = samples(api.get("/metrics").text)
        assert value(queued, "docq_queue_messages", queue="cpu") == shards
        assert value(queued, "docq_queue_messages", queue="webhooks") == 0
        assert value(queued, "docq_jobs_created_total", model=MODEL) == created_before + 1
        assert value(queued, "docq_triton_ready", endpoint=own_settings.triton_endpoints[0]) == 1

        worker_log, hooks_log = tmp_path / "worker.log", tmp_path / "hooks.log"
        hooks_env = {
            **env,
            "DOCQ_WORKER_METRICS_PORT": str(hooks_port),
            "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "multiproc"),
        }
        with (
            celery_worker({**env, "DOCQ_WORKER_METRICS_PORT": str(worker_port)}, worker_log),
            celery_worker(hooks_env, hooks_log, "webhooks", "hooks", concurrency=2, pool="prefork"),
        ):
            job, _ = wait_until_final(api, job_id, timeout=300)
            assert job["status"] == "succeeded"
            receiver.wait_for(lambda r: len(r) == 2)
            deadline = time.monotonic() + 60
            while api.get(f"/v1/jobs/{job_id}/webhook").json()["state"] != "delivered":
                assert time.monotonic() < deadline
                time.sleep(0.1)
            worker = samples(httpx.get(f"http://127.0.0.1:{worker_port}/metrics").text)
            hooks = samples(httpx.get(f"http://127.0.0.1:{hooks_port}/metrics").text)
        after = samples(api.get("/metrics").text)
        results = all_results(api, job_id, limit=100)

    windows = sum(r["windows"] for r in results)
    assert len(results) == n_docs and windows >= n_docs

    # the API: queues drained, the job counted once
    assert value(after, "docq_queue_messages", queue="cpu") == 0
    assert value(after, "docq_queue_messages", queue="cpu-priority") == 0
    assert value(after, "docq_queue_unacked_messages") == 0
    assert value(after, "docq_jobs_created_total", model=MODEL) == created_before + 1

    # the shard worker: documents, windows, batches, padding, Triton, the job's end
    m = {"model": MODEL}
    assert value(worker, "docq_documents_processed_total", outcome="classified", **m) == n_docs
    assert value(worker, "docq_worker_windows_total", **m) == windows
    batches = value(worker, "docq_worker_batches_total", **m)
    assert 1 <= batches <= windows
    assert value(worker, "docq_worker_batch_windows_count", **m) == batches
    assert value(worker, "docq_worker_batch_windows_sum", **m) == windows
    real = value(worker, "docq_worker_tokens_total", kind="real", **m)
    computed = value(worker, "docq_worker_tokens_total", kind="computed", **m)
    assert 0 < real <= computed
    assert value(worker, "docq_worker_shard_seconds_count", **m) == shards
    assert value(worker, "docq_jobs_finished_total", status="succeeded", **m) == 1
    assert value(worker, "docq_job_duration_seconds_count", **m) == 1
    elapsed = value(worker, "docq_job_duration_seconds_sum", **m)
    assert 0 < elapsed < 300
    endpoint = own_settings.triton_endpoints[0]
    assert value(worker, "docq_triton_request_seconds_count", endpoint=endpoint, **m) == batches
    assert value(worker, "docq_triton_request_seconds_sum", endpoint=endpoint, **m) > 0
    assert value(worker, "docq_triton_endpoint_up", endpoint=endpoint) == 1
    assert not [k for k in worker if k[0] == "docq_triton_request_errors_total"]

    # the webhooks worker: its prefork children's attempts, added up by its main process
    assert value(hooks, "docq_webhook_attempts_total", outcome="pending") == 1
    assert value(hooks, "docq_webhook_attempts_total", outcome="delivered") == 1

    # JSON logs: every line is an object, and every line about the job names it
    lines = [
        json.loads(line) for line in worker_log.read_text().splitlines() if line.startswith("{")
    ]
    about_job = [e for e in lines if job_id in e["message"]]
    assert len(about_job) >= shards  # "job ... shard n: 20 documents -> ..." at least
    assert all(e.get("job_id") == job_id for e in about_job)
    shard_lines = [e for e in lines if e["logger"] == "workers.shard"]
    assert {e["shard"] for e in shard_lines} == set(range(shards))
    hook_lines = [json.loads(x) for x in hooks_log.read_text().splitlines() if x.startswith("{")]
    assert [e for e in hook_lines if e.get("job_id") == job_id and "webhook" in e["message"]]

    # no log holds the API key, the webhook's signing secret or a document's text
    secret = created.json()["webhook"]["secret"]
    assert secret and secret.startswith("whsec_")
    never = {
        "API key": headers["Authorization"].removeprefix("Bearer "),
        "webhook secret": secret.removeprefix("whsec_"),
        **{f"text of {d['id']}": d["text"][20:60] for d in docs},
    }
    logs = {
        "worker": worker_log.read_text(),
        "webhooks worker": hooks_log.read_text(),
        "API": "\n".join(r.getMessage() for r in caplog.records),
    }
    assert len(logs["API"]) > 0 and job_id in logs["worker"]  # the logs were read
    for where, text in logs.items():
        for what, value_ in never.items():
            assert value_ not in text, f"the {where} log holds the {what}"
