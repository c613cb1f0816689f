"""A manifest job against its tenant's limits (api/manifests.py, docs/manifests.md): its count
is not known at the 202, so it reserves the most its parts can hold (within
DOCQ_MANIFEST_MAX_DOCUMENTS) against tenant_max_queued_documents, and holds what it has
found once its parts are read (by the workers' own code, workers/objects.py, on the same
real Redis). A tenant never has more queued than its limit: a second manifest, or an inline
upload, past it is a 429 and creates nothing. No worker reads this broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from docq.config import Settings
from docq.extract import Limits
from docq.objects import open_objects
from tests.conftest import tenant_headers
from tests.support.manifests import ndjson, put
from workers.objects import read_part

CAP = 20  # DOCQ_MANIFEST_MAX_DOCUMENTS
QUOTA = 30  # tenant_max_queued_documents
LINES = 12


@pytest.fixture
def tenant() -> str:
    return f"quota-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def limited(settings: Settings, redis_url: str, tenant: str) -> Iterator[TestClient]:
    from api.main import create_app

    limits = settings.model_copy(
        update={
            "broker_url": redis_url.rsplit("/", 1)[0] + "/15",
            "max_documents_per_job": 15,
            "tenant_max_queued_documents": QUOTA,
            "manifest_max_documents": CAP,
        }
    )
    with TestClient(create_app(limits), headers=tenant_headers(settings, tenant)) as client:
        yield client


def docs(n: int) -> list[dict[str, object]]:
    return [{"id": f"d{i}", "text": "INVOICE"} for i in range(n)]


def jobs(redis_url: str) -> set[bytes]:
    return set(redis.Redis.from_url(redis_url).keys("docq:job:*"))  # type: ignore[arg-type]


def refused(resp, redis_url: str, before: set[bytes]) -> None:  # type: ignore[no-untyped-def]
    assert resp.status_code == 429, resp.text
    error = resp.json()["error"]
    assert error["detail"]["limit"] == "tenant_max_queued_documents", error
    assert jobs(redis_url) == before, "a refused upload created a job"


def test_a_manifest_reserves_the_most_it_can_hold_until_its_parts_are_read(
    limited: TestClient, settings: Settings, redis_url: str, tenant: str
) -> None:
    put(settings, tenant, "m/a.ndjson", ndjson(docs(LINES)))  # 12 lines: may hold 100s
    manifest = {"model": "doc-type", "manifest": {"objects": ["m/a.ndjson"]}}
    first = limited.post("/v1/jobs", json=manifest)
    assert first.status_code == 202, first.text  # reserves CAP (20) of the 30
    before = jobs(redis_url)
    refused(limited.post("/v1/jobs", json=manifest), redis_url, before)  # 20 + 20 > 30
    refused(limited.post("/v1/jobs", json={"documents": docs(11)}), redis_url, before)

    store = limited.app.state.resources.store  # type: ignore[attr-defined]  # the workers read its parts (same Redis)
    job = store.get_job(first.json()["id"])
    for n in range(job.shards):
        assert read_part(
            store,
            open_objects(settings),
            job,
            n,
            limits=Limits.from_settings(settings),
            max_chars=settings.max_document_chars,
            max_file_bytes=settings.max_file_bytes,
            parallel=1,
        )
    assert store.get_job(job.id).documents == LINES  # now it holds 12, not 20: 12 + 11 fit
    assert limited.post("/v1/jobs", json={"documents": docs(11)}).status_code == 202
    before = jobs(redis_url)
    refused(limited.post("/v1/jobs", json={"documents": docs(8)}), redis_url, before)  # 31
