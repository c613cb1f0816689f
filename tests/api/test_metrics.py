"""api/metrics.py and the API's own counts: /metrics answers itself, a cancel is counted once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from devstack.services import redis_server
from docq.config import Settings
from tests.conftest import tenant_headers

pytestmark = pytest.mark.e2e


def cancelled(api: TestClient) -> float:
    for family in text_string_to_metric_families(api.get("/metrics").text):
        for s in family.samples:
            if s.name == "docq_jobs_finished_total" and s.labels == {
                "model": "doc-type",
                "status": "cancelled",
            }:
                return float(s.value)
    return 0.0


@pytest.fixture
def api(tmp_path: Path, settings: Settings) -> Iterator[TestClient]:
    """An API on a Redis of its own: no worker takes its jobs, so they stay cancellable."""
    from api.main import create_app

    with redis_server(tmp_path / "redis") as redis_url:
        s = settings.model_copy(update={"redis_url": redis_url})
        with TestClient(create_app(s), headers=tenant_headers(s)) as client:
            yield client


def test_metrics_answers_itself(api: TestClient) -> None:
    resp = api.get("/metrics", follow_redirects=False)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    assert "docq_queue_messages" in resp.text


def test_a_cancelled_job_is_counted_once(api: TestClient) -> None:
    docs = [{"id": "a", "text": "INVOICE No. 1"}, {"id": "b", "text": "RECEIPT"}]
    job_id = api.post("/v1/jobs", json={"model": "doc-type", "documents": docs}).json()["id"]
    before = cancelled(api)
    assert api.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    assert cancelled(api) == before + 1
    api.delete(f"/v1/jobs/{job_id}")  # a repeated DELETE cancels nothing more
    assert cancelled(api) == before + 1
