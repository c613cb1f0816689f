"""Bad uploads: each a JSON 4xx that names what is wrong, and no job is created."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from docq.queue import CPU_QUEUE, PRIORITY_QUEUE, bulk_lanes
from docq.store import Document, JobStore
from tests.conftest import TENANT

GOOD = {"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"}


def queue_lengths(r: redis.Redis, lanes: int) -> dict[str, int]:
    """Tasks waiting on every classification queue: small uploads go to cpu-priority, bulk
    ones to their tenant's lane of cpu."""
    queues = [CPU_QUEUE, *bulk_lanes(lanes), PRIORITY_QUEUE]
    return {q: int(r.llen(q)) for q in queues}


@pytest.fixture(scope="module")
def job_id(redis_url: str) -> str:
    """A job of the api client's tenant, written directly (not enqueued: no worker needed),
    before any test's snapshot of the jobs."""
    store = JobStore.from_url(redis_url, shard_size=8, ttl_s=3600)
    job = store.create_job("doc-type", [Document("a", "x")], tenant=TENANT)
    store.recovery.enqueued(job.id)
    return job.id


@pytest.fixture
def no_job_created(api: TestClient, redis_url: str, job_id: str) -> Iterator[None]:
    r = redis.Redis.from_url(redis_url)
    before = set(r.keys("docq:job:{*}"))  # job records only: other jobs' keys may come and go
    settings = api.app.state.resources.settings
    broker = redis.Redis.from_url(settings.celery_broker_url)  # no worker reads it (conftest)
    queued = queue_lengths(broker, settings.bulk_lanes)
    yield
    assert set(r.keys("docq:job:{*}")) == before, "a refused upload created a job"
    assert queue_lengths(broker, settings.bulk_lanes) == queued, "a refused upload enqueued tasks"


def error_of(resp) -> dict:
    body = resp.json()
    assert set(body) == {"error"}
    assert {"code", "message", "detail"} <= set(body["error"])
    return body["error"]


pytestmark = pytest.mark.usefixtures("no_job_created")


def test_malformed_json(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs", content=b'{"documents": [', headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400
    assert error_of(resp)["code"] == "malformed_body"


def test_empty_document_list(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": []})
    assert resp.status_code == 422
    err = error_of(resp)
    assert err["code"] == "invalid_request"
    assert "documents" in err["message"]


def test_document_without_text_is_named(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": [GOOD, {"id": "b2"}]})
    assert resp.status_code == 422
    err = error_of(resp)
    assert "document 1" in err["message"]
    (problem,) = err["detail"]["errors"]
    assert (problem["document"], problem["id"], problem["field"]) == (1, "b2", "text")


def test_document_with_empty_text(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": [{"id": "x", "text": ""}]})
    assert resp.status_code == 422
    assert error_of(resp)["detail"]["errors"][0]["field"] == "text"


def test_duplicate_ids(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": [GOOD, GOOD]})
    assert resp.status_code == 422
    assert "duplicate" in error_of(resp)["message"]


def test_unknown_model(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"model": "no-such-model", "documents": [GOOD]})
    assert resp.status_code == 422
    err = error_of(resp)
    assert err["code"] == "unknown_model"
    assert "doc-type" in err["detail"]["known"]


def test_unknown_model_in_ndjson_query(api: TestClient) -> None:
    resp = api.post(
        "/v1/jobs?model=nope",
        content=json.dumps(GOOD).encode(),
        headers={"content-type": "application/x-ndjson"},
    )
    assert resp.status_code == 422
    assert error_of(resp)["code"] == "unknown_model"


def test_malformed_ndjson_line_is_named(api: TestClient) -> None:
    body = json.dumps(GOOD).encode() + b"\n{not json\n"
    resp = api.post("/v1/jobs", content=body, headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 400
    assert error_of(resp)["detail"]["line"] == 2


def test_multipart_without_files(api: TestClient) -> None:
    resp = api.post("/v1/jobs", data={"model": "doc-type"}, files={"other": ("x.txt", b"x")})
    assert resp.status_code == 422


# A multipart file that is not UTF-8 is a failed document since issue 37, no longer a 422:
# tests/api/test_invalid_documents.py.


def test_unsupported_content_type(api: TestClient) -> None:
    resp = api.post("/v1/jobs", content=b"hello", headers={"content-type": "text/plain"})
    assert resp.status_code == 415


def test_unknown_fields_are_refused(api: TestClient) -> None:
    resp = api.post("/v1/jobs", json={"documents": [GOOD], "priority": "high"})
    assert resp.status_code == 422


def test_body_over_the_limit(api: TestClient) -> None:
    limit = api.app.state.resources.settings.max_upload_bytes
    resp = api.post(
        "/v1/jobs",
        content=b"{}",
        headers={"content-type": "application/json", "content-length": str(limit + 1)},
    )
    assert resp.status_code == 413


def test_unknown_job_is_404(api: TestClient) -> None:
    for path in ("/v1/jobs/nope", "/v1/jobs/nope/results"):
        resp = api.get(path)
        assert resp.status_code == 404
        assert error_of(resp)["code"] == "not_found"


@pytest.mark.parametrize("cursor", ["abc", "-1", "1.5", "²", "٣"])
def test_bad_cursor(api: TestClient, job_id: str, cursor: str) -> None:
    resp = api.get(f"/v1/jobs/{job_id}/results", params={"cursor": cursor})
    assert resp.status_code == 422
    err = error_of(resp)
    assert (err["code"], err["detail"]["field"]) == ("invalid_request", "cursor")


def test_limit_above_the_page_max_is_refused_not_clamped(api: TestClient, job_id: str) -> None:
    page_max = api.app.state.resources.settings.results_page_max
    resp = api.get(f"/v1/jobs/{job_id}/results", params={"limit": page_max + 1})
    assert resp.status_code == 422
    assert error_of(resp)["detail"] == {"field": "limit", "max": page_max}
    assert api.get(f"/v1/jobs/{job_id}/results", params={"limit": page_max}).status_code == 200
