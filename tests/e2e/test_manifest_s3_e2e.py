"""A job from object storage through the API with the objects in S3 (`DOCQ_MANIFEST_URL=
s3://...`): an S3 server process (moto's server mode, an S3 *emulator*: tests/support/s3.py),
a Redis and Celery workers of their own (the extract pool, the bulk lane) and the session's
tritonserver.

The manifest names NDJSON objects (one with a bad line) and files, and an object deleted
after the 202 and before any worker fetched it (the workers start after it is gone): every
document is answered once, each bad one with its code, and the results are written back to
the bucket as NDJSON. A tenant naming another tenant's objects by their URI is refused (403)
and nothing is created.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from devstack.services import celery_worker, redis_server
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import INVOICE, pdf
from tests.support.jobs import all_results, wait_until_final
from tests.support.manifests import ndjson
from tests.support.polling import until
from tests.support.s3 import CREDENTIALS, REGION, client, make_bucket, s3_emulator

READY_S = 180  # a worker's start-up on a busy 2-core machine (never shortened)
pytestmark = pytest.mark.e2e

BUCKET = "objects"
TENANT = "acme"


@pytest.fixture
def s3_stack(tmp_path: Path, settings: Settings) -> Iterator[tuple[Settings, str]]:
    """Settings on a Redis of their own whose manifests read a bucket; its endpoint."""
    with (
        redis_server(tmp_path / "redis") as redis_url,
        s3_emulator(tmp_path / "moto.log") as url,
    ):
        make_bucket(url, BUCKET)
        own = settings.model_copy(
            update={
                "redis_url": redis_url,
                "broker_url": "",
                "manifest_url": f"s3://{BUCKET}/root",
                "blob_s3_endpoint_url": url,
                "blob_s3_region": REGION,
                "blob_s3_access_key_id": CREDENTIALS["aws_access_key_id"],
                "blob_s3_secret_access_key": CREDENTIALS["aws_secret_access_key"],
            }
        )
        yield own, url


def put(url: str, name: str, data: bytes) -> None:
    client(url).put_object(Bucket=BUCKET, Key=f"root/tenants/{TENANT}/{name}", Body=data)


def test_a_manifest_of_s3_objects_is_answered_once_per_document_and_written_back_to_s3(
    s3_stack: tuple[Settings, str], tmp_path: Path
) -> None:
    from api.main import create_app

    own, url = s3_stack
    docs: list[dict[str, Any]] = [
        {"id": f"n{i}", "text": f"INVOICE {i} total due {i * 3} EUR"} for i in range(20)
    ]
    lines = ndjson(docs) + b"not json\n"
    put(url, "b/lines.ndjson", lines)
    put(url, "b/more.jsonl", ndjson([{"id": "m0", "text": "Lease agreement for 3 Elm Road"}]))
    put(url, "b/invoice.pdf", pdf(INVOICE))
    put(url, "b/letter.txt", b"Dear customer, your order has shipped.")
    put(url, "b/gone.txt", b"deleted before any worker reads it")
    names = ["lines.ndjson", "more.jsonl", "invoice.pdf", "letter.txt", "gone.txt"]
    r = redis.Redis.from_url(own.redis_url)
    with TestClient(create_app(own), headers=tenant_headers(own, TENANT)) as api:
        other = {"Authorization": tenant_headers(own, "other")["Authorization"]}
        before = (set(r.keys("docq:job:*")), r.dbsize())
        stolen = api.post(
            "/v1/jobs",
            headers=other,
            json={"manifest": {"objects": [f"s3://{BUCKET}/root/tenants/{TENANT}/b/lines.ndjson"]}},
        )
        assert stolen.status_code == 403, stolen.text
        assert stolen.json()["error"]["code"] == "forbidden_object"
        assert (set(r.keys("docq:job:*")), r.dbsize()) == before, "a refused manifest stored"

        resp = api.post(
            "/v1/jobs",
            json={
                "model": "doc-type",
                "manifest": {"objects": [f"b/{n}" for n in names]},
                "results": "b/out/",
            },
        )
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        client(url).delete_object(Bucket=BUCKET, Key=f"root/tenants/{TENANT}/b/gone.txt")
        env = settings_env(own)
        with (
            celery_worker(
                env,
                tmp_path / "bulk.log",
                "cpu,cpu-priority",
                "bulk",
                concurrency=2,
                ready_s=READY_S,
            ),
            celery_worker(
                env, tmp_path / "extract.log", "extract", "extract", concurrency=2, ready_s=READY_S
            ),
        ):
            wait_until_final(api, job_id, timeout=300)
            job = until(  # written back once final, before its event
                lambda: (j := api.get(f"/v1/jobs/{job_id}").json())["results_files"] and j,
                "the results written back",
                timeout=120,
            )
            results = all_results(api, job_id)

    assert job["status"] == "succeeded", job
    codes = [(x["id"], x.get("error_code")) for x in results]
    assert codes == [
        *((d["id"], None) for d in docs),
        (f"b/lines.ndjson@{len(lines) - len(b'not json') - 1}", "invalid_line"),
        ("m0", None),
        ("b/invoice.pdf", None),
        ("b/letter.txt", None),
        ("b/gone.txt", "missing"),
    ]
    assert all("label" in x for x in results if x.get("error_code") is None)
    store = JobStore.from_url(own.redis_url, shard_size=8, ttl_s=3600)
    ledger = store.answers(job_id)
    assert len(ledger) == len(results) and set(ledger.values()) == {1}, "each answered once"

    files = job["results_files"]
    assert files and all(f.startswith(f"s3://{BUCKET}/root/tenants/{TENANT}/b/out/") for f in files)
    s3 = client(url)
    written = [
        json.loads(line)
        for f in files
        for line in s3.get_object(Bucket=BUCKET, Key=f.removeprefix(f"s3://{BUCKET}/"))["Body"]
        .read()
        .splitlines()
    ]
    assert written == results
