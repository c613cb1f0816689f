"""Tenants and access through the API: 401 without a valid key, another tenant's job is a
404 on every endpoint, Idempotency-Keys scoped per tenant, per-tenant limits (429)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from docq.config import Settings
from docq.store import connection
from docq.store.tenants import Tenants
from tests.conftest import tenant_headers

DOCS = [{"id": "a", "text": "INVOICE No. 1 Total due 10.00 EUR"}]
HOOK = {"url": "http://127.0.0.1:9/hooks"}


def endpoints(job_id: str) -> list[tuple[str, str]]:
    """Every /v1 endpoint that names a job, as (method, path)."""
    return [
        ("GET", f"/v1/jobs/{job_id}"),
        ("GET", f"/v1/jobs/{job_id}/results"),
        ("DELETE", f"/v1/jobs/{job_id}"),
        ("GET", f"/v1/jobs/{job_id}/webhook"),
        ("POST", f"/v1/jobs/{job_id}/webhook/redeliver"),
    ]


def job_keys(redis_url: str) -> set[bytes]:
    return set(redis.Redis.from_url(redis_url).keys("docq:job:{*}"))


@pytest.fixture(scope="module")
def other_tenant(settings: Settings) -> dict[str, str]:
    return tenant_headers(settings, "other-tenant")


def test_every_v1_endpoint_needs_a_valid_key(
    api: TestClient, settings: Settings, redis_url: str
) -> None:
    job_id = api.post("/v1/jobs", json={"documents": DOCS, "webhook": HOOK}).json()["id"]
    tenants = Tenants(connection.connect(redis_url), secret=settings.api_key_secret)
    revoked_record, revoked = tenants.create_key("revoked-tenant")
    tenants.revoke_key(revoked_record.id)
    refused = {
        "no header": None,
        "empty": "",
        "not bearer": f"Basic {revoked}",
        "bearer without key": "Bearer ",
        "unknown key": "Bearer dq_000000000000_nope",
        "not a docq key": "Bearer hunter2",
        "revoked key": f"Bearer {revoked}",
    }
    calls = [("POST", "/v1/jobs"), ("GET", "/v1/models"), *endpoints(job_id)]
    bare = TestClient(api.app)  # the same app (running), without the session's key
    before = job_keys(redis_url)
    for why, value in refused.items():
        headers = {} if value is None else {"authorization": value}
        for method, path in calls:
            resp = bare.request(method, path, json={"documents": DOCS}, headers=headers)
            assert resp.status_code == 401, (why, method, path, resp.text)
            assert resp.json()["error"]["code"] == "unauthorized"
            assert set(resp.json()["error"]) == {"code", "message", "detail"}
            assert resp.headers["www-authenticate"].startswith("Bearer")
    assert job_keys(redis_url) == before, "a refused request created a job"
    assert api.get(f"/v1/jobs/{job_id}").json()["status"] == "queued"  # DELETEs cancelled nothing


def test_health_and_metrics_stay_open(api: TestClient) -> None:
    bare = TestClient(api.app)
    for path in ("/healthz", "/metrics"):
        assert bare.get(path).status_code == 200
    assert bare.get("/readyz").status_code != 401


def test_another_tenants_job_is_a_404_on_every_endpoint(
    api: TestClient, other_tenant: dict[str, str]
) -> None:
    job_id = api.post("/v1/jobs", json={"documents": DOCS, "webhook": HOOK}).json()["id"]
    unknown = uuid.uuid4().hex
    for (method, path), (_, unknown_path) in zip(
        endpoints(job_id), endpoints(unknown), strict=True
    ):
        resp = api.request(method, path, headers=other_tenant)
        assert resp.status_code == 404, (method, path, resp.text)
        # exactly what a job that does not exist gets: an id reveals nothing
        missing = api.request(method, unknown_path, headers=other_tenant).json()["error"]
        error = resp.json()["error"]
        assert error["code"] == missing["code"] == "not_found"
        assert error["message"].replace(job_id, "ID") == missing["message"].replace(unknown, "ID")
        assert HOOK["url"] not in resp.text
    # the owner still has it, uncancelled
    mine = api.get(f"/v1/jobs/{job_id}")
    assert (mine.status_code, mine.json()["status"]) == (200, "queued")
    assert api.get(f"/v1/jobs/{job_id}/webhook").json()["url"] == HOOK["url"]


def test_idempotency_keys_are_scoped_per_tenant(
    api: TestClient, other_tenant: dict[str, str]
) -> None:
    key = {"idempotency-key": f"shared-{uuid.uuid4()}"}
    mine = api.post("/v1/jobs", json={"documents": DOCS}, headers=key)
    assert mine.status_code == 202
    # the same key and body from another tenant is that tenant's own new job
    theirs = api.post("/v1/jobs", json={"documents": DOCS}, headers={**key, **other_tenant})
    assert theirs.status_code == 202
    assert theirs.json()["id"] != mine.json()["id"]
    # with another body: not a 409 (the key is not the other tenant's), and no job leaked
    other_body = {"documents": [{"id": "z", "text": "RECEIPT"}]}
    third = api.post("/v1/jobs", json=other_body, headers={**key, **other_tenant})
    assert third.status_code == 409  # its own key, reused with a different request
    assert mine.json()["id"] not in third.text and theirs.json()["id"] not in third.text
    assert (
        api.post("/v1/jobs", json={"documents": DOCS}, headers=key).json()["id"]
        == (mine.json()["id"])
    )


@pytest.fixture
def limited(settings: Settings, redis_url: str) -> Iterator[TestClient]:
    """An API with small per-tenant limits, for a fresh tenant. Its tasks go to a broker no
    worker reads (another Redis database), so its jobs stay queued."""
    from api.main import create_app

    limits = settings.model_copy(
        update={
            "broker_url": redis_url.rsplit("/", 1)[0] + "/15",
            "max_documents_per_job": 5,
            "tenant_max_queued_documents": 8,
            "tenant_max_active_jobs": 3,
        }
    )
    headers = tenant_headers(settings, f"limited-{uuid.uuid4().hex[:8]}")
    with TestClient(create_app(limits), headers=headers) as client:
        yield client


def docs(n: int) -> list[dict[str, str]]:
    return [{"id": f"d{i}", "text": "INVOICE"} for i in range(n)]


def assert_429(resp, limit: str) -> None:
    assert resp.status_code == 429, resp.text
    assert int(resp.headers["retry-after"]) > 0
    error = resp.json()["error"]
    assert (error["code"], error["detail"]["limit"]) == ("tenant_limit_exceeded", limit)


def test_queued_documents_over_the_limit_get_429(limited: TestClient, redis_url: str) -> None:
    first = limited.post("/v1/jobs", json={"documents": docs(5)})
    assert first.status_code == 202
    before = job_keys(redis_url)
    assert_429(limited.post("/v1/jobs", json={"documents": docs(4)}), "tenant_max_queued_documents")
    assert job_keys(redis_url) == before, "a refused upload created a job"
    assert limited.post("/v1/jobs", json={"documents": docs(3)}).status_code == 202  # 8: at it
    limited.delete(f"/v1/jobs/{first.json()['id']}")  # a final job no longer counts
    assert limited.post("/v1/jobs", json={"documents": docs(5)}).status_code == 202


def test_active_jobs_over_the_limit_get_429(limited: TestClient, redis_url: str) -> None:
    ids = [limited.post("/v1/jobs", json={"documents": docs(1)}).json()["id"] for _ in range(3)]
    before = job_keys(redis_url)
    assert_429(limited.post("/v1/jobs", json={"documents": docs(1)}), "tenant_max_active_jobs")
    # a refused upload holds no Idempotency-Key: it succeeds once there is room
    key = {"idempotency-key": f"k-{uuid.uuid4()}"}
    assert_429(
        limited.post("/v1/jobs", json={"documents": docs(1)}, headers=key), "tenant_max_active_jobs"
    )
    assert job_keys(redis_url) == before
    limited.delete(f"/v1/jobs/{ids[0]}")
    assert limited.post("/v1/jobs", json={"documents": docs(1)}, headers=key).status_code == 202


def test_auth_can_be_turned_off(settings: Settings) -> None:
    from api.main import create_app

    with TestClient(create_app(settings.model_copy(update={"auth_enabled": False}))) as client:
        created = client.post("/v1/jobs", json={"documents": DOCS})
        assert created.status_code == 202
        assert client.get(f"/v1/jobs/{created.json()['id']}").status_code == 200
