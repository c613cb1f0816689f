"""Files through the whole stack with the blob store (docq/blobs): the session's API,
Celery workers (the extract pool, the bulk lane) and tritonserver, on a directory store.

A scan, a PDF and a DOCX in a multipart upload (the PDF and the scan stream into the store
as they arrive; the DOCX is held and stored with the job) and a PDF in a JSON upload are
read, classified and answered right; once each file's text is stored its blob is gone
from the store, and Redis held only references meanwhile.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from docq.config import Settings
from docq.store import JobStore
from tests.support.files import DOCX_TYPE, INVOICE, docx, pdf, png
from tests.support.jobs import all_results, wait_until_final

pytestmark = pytest.mark.e2e


def blobs_in(settings: Settings) -> set[str]:
    root = Path(settings.blob_url.removeprefix("file://"))
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_files_go_through_the_blob_store_and_their_blobs_are_gone_once_read(
    api: TestClient, worker: object, extract_worker: object, settings: Settings
) -> None:
    before = blobs_in(settings)  # what earlier tests' unread jobs left (not this test's)
    invoice = pdf(INVOICE, "Thank you for your business.")
    files = [
        ("invoice.pdf", invoice, "application/pdf"),
        ("scan.png", png(200, 100), "image/png"),  # blank: read, no text in it
        ("letter.docx", docx(INVOICE), DOCX_TYPE),
    ]
    multipart = api.post("/v1/jobs", files=[("files", f) for f in files])
    assert multipart.status_code == 202, multipart.text
    doc = {"id": "b64.pdf", "content": base64.b64encode(invoice).decode()}
    as_json = api.post("/v1/jobs", json={"documents": [{**doc, "content_type": "application/pdf"}]})
    assert as_json.status_code == 202, as_json.text

    job, _ = wait_until_final(api, multipart.json()["id"], timeout=300)
    other, _ = wait_until_final(api, as_json.json()["id"], timeout=300)
    assert job["status"] == other["status"] == "succeeded", (job, other)
    results = {r["id"]: r for r in all_results(api, job["id"])}
    assert list(results) == ["invoice.pdf", "scan.png", "letter.docx"]
    pdf_text = INVOICE + "\n\nThank you for your business."
    assert (results["invoice.pdf"]["pages"], results["invoice.pdf"]["chars"]) == (2, len(pdf_text))
    assert results["scan.png"]["error_code"] == "no_text", results["scan.png"]
    assert results["letter.docx"]["chars"] == len(INVOICE) and "label" in results["letter.docx"]
    (b64,) = all_results(api, other["id"])
    assert b64["label"] == results["invoice.pdf"]["label"]
    assert b64["scores"] == pytest.approx(results["invoice.pdf"]["scores"], abs=1e-4)

    assert blobs_in(settings) <= before, "a file's blob outlived the storing of its text"
    store = JobStore.from_url(settings.redis_url, shard_size=8, ttl_s=3600)
    assert store.answers(job["id"]) == dict.fromkeys(range(3), 1)
