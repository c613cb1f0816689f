"""Files through the whole stack with the blob store in S3 (`DOCQ_BLOB_URL=s3://...`):
an S3 server process (moto's server mode, an S3 *emulator*: tests/support/s3.py), Celery
workers of their own (the extract pool, the bulk lane) and the session's tritonserver.

A mixed multipart upload (a PDF and a scan stream into S3 as they arrive; a DOCX and a
text file are held, the DOCX stored in S3 with the job) and a JSON upload's base64 PDF are
read, classified and answered right, each document once; once the jobs are done the
bucket is empty: no object, no unfinished multipart upload.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from devstack.services import celery_worker, redis_server
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import DOCX_TYPE, INVOICE, docx, pdf, png
from tests.support.jobs import all_results, wait_until_final
from tests.support.s3 import objects, s3_emulator, s3_settings

READY_S = 180  # a worker's start-up on a busy 2-core machine (never shortened)
pytestmark = pytest.mark.e2e

BUCKET = "e2e"


@pytest.fixture
def s3_stack(tmp_path: Path, settings: Settings) -> Iterator[tuple[Settings, str]]:
    """Settings on a Redis of their own with the blob store in an S3 bucket; its endpoint."""
    with (
        redis_server(tmp_path / "redis") as redis_url,
        s3_emulator(tmp_path / "moto.log") as url,
    ):
        own = settings.model_copy(update={"redis_url": redis_url})
        yield s3_settings(own, url, BUCKET), url


def test_files_go_through_an_s3_blob_store_and_the_bucket_is_empty_after(
    s3_stack: tuple[Settings, str], tmp_path: Path
) -> None:
    from api.main import create_app

    own, url = s3_stack
    env = settings_env(own)
    invoice = pdf(INVOICE, "Thank you for your business.")
    files = [
        ("invoice.pdf", invoice, "application/pdf"),
        ("scan.png", png(200, 100), "image/png"),  # blank: read, no text in it
        ("letter.docx", docx(INVOICE), DOCX_TYPE),
        ("note.txt", INVOICE.encode(), "text/plain"),
    ]
    with (
        TestClient(create_app(own), headers=tenant_headers(own)) as api,
        celery_worker(
            env, tmp_path / "bulk.log", "cpu,cpu-priority", "bulk", concurrency=2, ready_s=READY_S
        ),
        celery_worker(
            env, tmp_path / "extract.log", "extract", "extract", concurrency=2, ready_s=READY_S
        ),
    ):
        multipart = api.post("/v1/jobs", files=[("files", f) for f in files])
        assert multipart.status_code == 202, multipart.text
        doc = {"id": "b64.pdf", "content": base64.b64encode(invoice).decode()}
        as_json = api.post(
            "/v1/jobs", json={"documents": [{**doc, "content_type": "application/pdf"}]}
        )
        assert as_json.status_code == 202, as_json.text
        job, _ = wait_until_final(api, multipart.json()["id"], timeout=300)
        other, _ = wait_until_final(api, as_json.json()["id"], timeout=300)
        assert job["status"] == other["status"] == "succeeded", (job, other)
        results = {r["id"]: r for r in all_results(api, job["id"])}
        (b64,) = all_results(api, other["id"])

    assert list(results) == [name for name, _, _ in files]
    pdf_text = INVOICE + "\n\nThank you for your business."
    assert (results["invoice.pdf"]["pages"], results["invoice.pdf"]["chars"]) == (2, len(pdf_text))
    assert results["scan.png"]["error_code"] == "no_text", results["scan.png"]
    assert results["letter.docx"]["chars"] == len(INVOICE) and "label" in results["letter.docx"]
    assert "label" in results["note.txt"]
    assert b64["label"] == results["invoice.pdf"]["label"]
    assert b64["scores"] == pytest.approx(results["invoice.pdf"]["scores"], abs=1e-4)
    store = JobStore.from_url(own.redis_url, shard_size=8, ttl_s=3600)
    assert store.answers(job["id"]) == dict.fromkeys(range(len(files)), 1)
    assert objects(url, BUCKET) == [], "a file's blob outlived the storing of its text"
