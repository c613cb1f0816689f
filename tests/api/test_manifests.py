"""Jobs from object storage (docs/manifests.md): the API's checks of a manifest, against a
real Redis and the directory object store on the real file system. The 202 reads no
document: each part is one small reference in Redis and one task on the extract queue. A
manifest naming what its tenant may not read, or what is not there, creates nothing. No
worker reads this broker (tests/api/conftest.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

from docq import keys
from docq.config import Settings
from docq.manifests import FIRST_PART_BYTES, Part
from docq.queue import EXTRACT_QUEUE, EXTRACT_SHARD, PROCESS_SHARD
from docq.store.manifests import pending_part
from tests.api.conftest import queued
from tests.conftest import TENANT, tenant_headers
from tests.support.manifests import ndjson, objects_root, put


def store_of(api: TestClient):  # type: ignore[no-untyped-def]
    return api.app.state.resources.store


@pytest.fixture
def batch(settings: Settings) -> str:
    """A fresh prefix of TENANT's objects holding two NDJSON objects and a text file."""
    name = f"batch-{uuid.uuid4().hex[:8]}"
    lines = [{"id": f"d{i}", "text": f"INVOICE {i} total due 40 EUR " * 50} for i in range(400)]
    put(settings, TENANT, f"{name}/a.ndjson", ndjson(lines[:300]))
    put(settings, TENANT, f"{name}/b.jsonl", ndjson(lines[300:]))
    put(settings, TENANT, f"{name}/letter.txt", b"Dear customer, your order has shipped.")
    return name


@pytest.fixture
def nothing_created(redis_url: str, broker: redis.Redis) -> Iterator[None]:
    r = redis.Redis.from_url(redis_url)
    before = set(r.keys("docq:job:*"))
    yield
    assert set(r.keys("docq:job:*")) - before == set(), "a refused manifest stored something"
    assert broker.dbsize() == 0, "a refused manifest enqueued something"


def test_a_manifest_is_answered_with_parts_and_no_document_read(
    api: TestClient, broker: redis.Redis, settings: Settings, batch: str
) -> None:
    objects = [f"{batch}/a.ndjson", f"{batch}/b.jsonl", f"{batch}/letter.txt"]
    resp = api.post("/v1/jobs", json={"model": "doc-type", "manifest": {"objects": objects}})
    assert resp.status_code == 202, resp.text
    answer = resp.json()
    assert answer["documents"] == 0  # counted by the workers as they read
    store = store_of(api)
    job = store.get_job(answer["id"])
    size_a = (objects_root(settings) / "tenants" / TENANT / objects[0]).stat().st_size
    part_bytes = settings.manifest_part_bytes
    assert size_a > part_bytes, "a.ndjson must span parts"
    # a.ndjson: a short first part (first results sooner), then ranges of part_bytes
    ranges = -(-(size_a - FIRST_PART_BYTES) // part_bytes)
    size_b = (objects_root(settings) / "tenants" / TENANT / objects[1]).stat().st_size
    ranges_b = -(-size_b // part_bytes)  # b.jsonl: ranges; letter.txt: one part
    assert job.manifest is not None and job.shards == 1 + ranges + ranges_b + 1
    first = pending_part(store, job, 0)
    assert first == Part((f"tenants/{TENANT}/{objects[0]}",), 0, FIRST_PART_BYTES, ndjson=True)
    second = pending_part(store, job, 1)
    end = FIRST_PART_BYTES + part_bytes
    assert second == Part((f"tenants/{TENANT}/{objects[0]}",), FIRST_PART_BYTES, end, ndjson=True)
    last = pending_part(store, job, job.shards - 1)
    assert last == Part((f"tenants/{TENANT}/{objects[2]}",))
    # No document's text is in Redis: only references.
    for n in range(job.shards):
        assert b"INVOICE" not in store.r.get(keys.shard(job.id, n))
    waiting = queued(broker, settings.bulk_lanes)
    tasks = sorted(waiting[EXTRACT_QUEUE], key=lambda t: t[1][1])
    assert tasks == [(EXTRACT_SHARD, [job.id, n]) for n in range(job.shards)]
    status = api.get(f"/v1/jobs/{job.id}").json()
    assert status["parts"] == {"total": job.shards, "read": 0}


def test_a_prefix_names_every_object_under_it(
    api: TestClient, broker: redis.Redis, batch: str
) -> None:
    resp = api.post("/v1/jobs", json={"model": "doc-type", "manifest": {"prefix": f"{batch}/"}})
    assert resp.status_code == 202, resp.text
    job = store_of(api).get_job(resp.json()["id"])
    named = {pending_part(store_of(api), job, n).keys[0] for n in range(job.shards)}  # type: ignore[union-attr]
    assert named == {f"tenants/{TENANT}/{batch}/{x}" for x in ("a.ndjson", "b.jsonl", "letter.txt")}


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    "name",
    [
        "../other/secret.ndjson",  # out of the tenant's prefix by `..`
        "{root}tenants/other/secret.ndjson",  # another tenant's, as a full URI
        "file:///etc/passwd",  # another store
    ],
)
def test_a_tenant_naming_another_tenants_objects_gets_nothing(
    api: TestClient, settings: Settings, name: str
) -> None:
    put(settings, "other", "secret.ndjson", ndjson([{"id": "s", "text": "their invoice"}]))
    uri = name.format(root=settings.manifest_url.rstrip("/") + "/")
    resp = api.post("/v1/jobs", json={"model": "doc-type", "manifest": {"objects": [uri]}})
    assert resp.status_code == 403, resp.text
    assert resp.json()["error"]["code"] == "forbidden_object"


def test_the_owner_names_its_own_objects_by_full_uri(
    api: TestClient, broker: redis.Redis, settings: Settings
) -> None:
    put(settings, "other", "mine.ndjson", ndjson([{"id": "s", "text": "our invoice"}]))
    uri = settings.manifest_url.rstrip("/") + "/tenants/other/mine.ndjson"
    resp = api.post(
        "/v1/jobs",
        json={"model": "doc-type", "manifest": {"objects": [uri]}},
        headers=tenant_headers(settings, "other"),
    )
    assert resp.status_code == 202, resp.text


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"manifest": {"objects": ["nowhere/x.ndjson"]}}, 422, "invalid_request"),
        ({"manifest": {"prefix": "nowhere/"}}, 422, "invalid_request"),
        ({"manifest": {"objects": ["a"], "prefix": "b/"}}, 422, "invalid_request"),
        ({"manifest": {"objects": []}}, 422, "invalid_request"),
        ({"manifest": {"objects": ["x"]}, "documents": []}, 422, "invalid_request"),
        ({"manifest": {"prefix": "{batch}/"}, "results": "../other/"}, 403, "forbidden_object"),
        ({"manifest": {"prefix": "{batch}/"}, "model": "nope"}, 422, "unknown_model"),
    ],
)
def test_a_bad_manifest_is_refused_whole(
    api: TestClient, batch: str, body: dict[str, object], status: int, code: str
) -> None:
    manifest = body["manifest"]
    assert isinstance(manifest, dict)
    if "prefix" in manifest:
        manifest["prefix"] = manifest["prefix"].format(batch=batch)
    resp = api.post("/v1/jobs", json={"model": "doc-type", **body})
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["code"] == code


def test_documents_uploads_still_work_beside_manifests(
    api: TestClient, broker: redis.Redis
) -> None:
    text = 'a "manifest" in a document is only text'
    resp = api.post(
        "/v1/jobs", json={"model": "doc-type", "documents": [{"id": "a", "text": text}]}
    )
    assert resp.status_code == 202, resp.text
    assert resp.json()["documents"] == 1


def test_a_manifest_of_ndjson_only_goes_straight_to_the_classifying_workers(
    api: TestClient, broker: redis.Redis, settings: Settings, batch: str
) -> None:
    resp = api.post(
        "/v1/jobs", json={"model": "doc-type", "manifest": {"objects": [f"{batch}/b.jsonl"]}}
    )
    assert resp.status_code == 202, resp.text
    job = store_of(api).get_job(resp.json()["id"])
    waiting = queued(broker, settings.bulk_lanes)
    assert waiting[EXTRACT_QUEUE] == []  # its lines need no extraction: read as classified
    shard_tasks = [t for q, tasks in waiting.items() for t in tasks]
    assert sorted(t[1][1] for t in shard_tasks) == list(range(job.shards))
    assert {t[0] for t in shard_tasks} == {PROCESS_SHARD}
