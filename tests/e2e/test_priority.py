"""Small jobs take their own lane: a 3-document job does not wait for a bulk job to finish."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from corpus.doc_type import generate
from tests.support.jobs import wait_until_final

pytestmark = pytest.mark.e2e


def test_a_small_job_overtakes_a_running_bulk_job(
    api: TestClient, worker: object, priority_worker: object
) -> None:
    bulk_docs = [d for d in generate(120, seed=61) if len(d.text) > 4000][:40]
    bulk = api.post(
        "/v1/jobs", json={"documents": [{"id": d.id, "text": d.text} for d in bulk_docs]}
    )
    assert bulk.status_code == 202
    bulk_id = bulk.json()["id"]
    deadline = time.monotonic() + 120
    while api.get(f"/v1/jobs/{bulk_id}").json()["status"] != "running":
        assert time.monotonic() < deadline, "the bulk job never started"
        time.sleep(0.05)

    small_docs = generate(3, seed=62)
    small = api.post(
        "/v1/jobs", json={"documents": [{"id": d.id, "text": d.text} for d in small_docs]}
    )
    small_job, _ = wait_until_final(api, small.json()["id"], timeout=120)
    bulk_now = api.get(f"/v1/jobs/{bulk_id}").json()

    assert small_job["status"] == "succeeded"
    assert bulk_now["status"] == "running", "the small job waited for the bulk job to finish"
    assert bulk_now["progress"]["documents_done"] < len(bulk_docs)
    bulk_job, _ = wait_until_final(api, bulk_id, timeout=600)
    assert bulk_job["status"] == "succeeded"
    assert small_job["finished_at"] < bulk_job["finished_at"]
