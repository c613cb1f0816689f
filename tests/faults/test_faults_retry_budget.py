"""Triton gone for good: a shard's retries run out of their time budget
(`task_retry_budget_s`, 6 s here), its documents get an error that says so, the job ends
`failed`, and its webhook is sent once.

The workers' Triton endpoint is a port where no server listens (a server stopped for good,
without paying for one's start); the API's catalogue reads the session's Triton, so the
upload is accepted as it would be before an outage.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from devstack.services import celery_worker, free_port, redis_server
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.jobs import all_results, wait_until_final
from tests.support.receiver import Receiver

pytestmark = [pytest.mark.e2e]

BUDGET_S = 6.0
DOCUMENTS = 20  # three shards of 8, 8 and 4: a bulk job


@pytest.fixture
def budget_settings(tmp_path: Path, settings: Settings) -> Iterator[Settings]:
    with redis_server(tmp_path / "redis") as redis_url:
        yield settings.model_copy(
            update={
                "redis_url": redis_url,
                "task_retry_budget_s": BUDGET_S,
                "task_retry_backoff_s": 1,
                "task_retry_backoff_max_s": 2,
            }
        )


@pytest.mark.timeout(240)
def test_retries_out_of_budget_fail_the_documents_finish_the_job_and_send_its_event_once(
    budget_settings: Settings, tmp_path: Path
) -> None:
    from api.main import create_app

    worker_env = settings_env(
        budget_settings.model_copy(update={"triton_grpc_url": f"127.0.0.1:{free_port()}"})
    )
    env = settings_env(budget_settings)
    store = JobStore.from_url(budget_settings.redis_url, shard_size=8, ttl_s=3600)
    receiver = Receiver(200)
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ="
    docs = [{"id": f"d{i}", "text": f"invoice number {i}"} for i in range(DOCUMENTS)]
    with (
        receiver.serve() as url,
        TestClient(create_app(budget_settings), headers=tenant_headers(budget_settings)) as api,
        celery_worker(worker_env, tmp_path / "worker.log", "cpu", "shards", concurrency=4),
        celery_worker(env, tmp_path / "webhooks.log", "webhooks", "webhooks", pool="prefork"),
    ):
        started = time.monotonic()
        upload = {"documents": docs, "webhook": {"url": url, "secret": secret}}
        job_id = api.post("/v1/jobs", json=upload).json()["id"]
        job, _ = wait_until_final(api, job_id, timeout=120)
        took = time.monotonic() - started
        receiver.wait_for(lambda got: len(got) >= 1, 60)
        time.sleep(3)  # a second event, if one were coming, would come in this time
        results = all_results(api, job_id)
        hook = api.get(f"/v1/jobs/{job_id}/webhook").json()

    assert BUDGET_S <= took < BUDGET_S + 60  # retried for the budget, then gave up
    assert job["status"] == "failed"
    assert job["progress"] == {"documents_done": DOCUMENTS, "documents_failed": DOCUMENTS}
    assert [r["id"] for r in results] == [d["id"] for d in docs]
    assert all("label" not in r for r in results)
    assert {r["error"] for r in results} == {
        f"no Triton endpoint serves model 'doc-type' (gave up after retrying for {BUDGET_S:g} s)"
    }
    assert store.answers(job_id) == dict.fromkeys(range(DOCUMENTS), 1)
    assert store.recovery.held() == {}  # no lease left for a sweeper to bring back
    (request,) = receiver.requests  # once
    event = Webhook(secret).verify(request.body, request.headers)
    assert event["type"] == "job.failed"
    assert event["data"]["status"] == "failed"
    assert hook["state"] == "delivered"
    assert "retrying in" in (tmp_path / "worker.log").read_text()  # it did retry first
