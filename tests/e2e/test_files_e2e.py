"""Uploaded files through the whole stack (issue 21): real Celery workers (the bulk and
small-job lanes, and the extract pool), the session's tritonserver and Redis.

A PDF, an HTML e-mail and a text document are read, classified and answered with how they
were read (`pages`, `extraction`, `chars`); a truncated PDF gets its own error and the job
still finishes. The PDF's text is classified as the same text uploaded as text is.
"""

from __future__ import annotations

import subprocess

import pytest
from fastapi.testclient import TestClient

from docq.store import JobStore
from tests.support.files import INVOICE, pdf
from tests.support.jobs import all_results, wait_until_final

pytestmark = pytest.mark.e2e

HTML = (
    b"<!DOCTYPE html><html><head><title>Order</title><style>p{color:red}</style></head>"
    b"<body><p>Dear customer,</p><p>your order <b>No. 5521</b> has shipped today and will "
    b"arrive within three days.</p><script>track()</script></body></html>"
)
LEASE = "This lease agreement is made between the landlord and the tenant for the flat."


def test_a_pdf_an_html_mail_and_a_text_are_read_classified_and_a_broken_file_fails_alone(
    api: TestClient, worker: object, extract_worker: object, redis_url: str
) -> None:
    invoice = pdf(INVOICE, "Thank you for your business.")
    files = [
        ("invoice.pdf", invoice, "application/pdf"),
        ("mail.html", HTML, "text/html"),
        ("lease.txt", LEASE.encode(), "text/plain"),
        ("broken.pdf", invoice[: len(invoice) // 2], "application/pdf"),  # cut short
    ]
    resp = api.post("/v1/jobs", files=[("files", f) for f in files])
    assert resp.status_code == 202, resp.text
    job, _ = wait_until_final(api, resp.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job
    assert job["progress"] == {"documents_done": 4, "documents_failed": 1}
    results = {r["id"]: r for r in all_results(api, job["id"])}
    assert list(results) == ["invoice.pdf", "mail.html", "lease.txt", "broken.pdf"]

    pdf_text = INVOICE + "\n\nThank you for your business."
    read = {
        k: (r["pages"], r["extraction"], r["chars"]) for k, r in results.items() if "label" in r
    }
    assert read == {
        "invoice.pdf": (2, "text", len(pdf_text)),
        "mail.html": (1, "text", read["mail.html"][2]),
        "lease.txt": (1, "text", len(LEASE)),
    }
    assert 60 < read["mail.html"][2] < 120, "the mail's text, without its markup or script"
    for r in results.values():
        if "label" in r:
            assert abs(sum(r["scores"].values()) - 1) < 1e-3 and r["windows"] >= 1
    broken = results["broken.pdf"]
    assert broken["error_code"] == "truncated" and broken["error"] and "label" not in broken

    # the PDF is classified on its text: as the same text uploaded as text
    same = api.post("/v1/jobs", json={"documents": [{"id": "t", "text": pdf_text}]}).json()
    wait_until_final(api, same["id"], timeout=300)
    (as_text,) = all_results(api, same["id"])
    assert as_text["label"] == results["invoice.pdf"]["label"]
    assert as_text["scores"] == pytest.approx(results["invoice.pdf"]["scores"], abs=1e-4)

    # once read, a file's bytes leave Redis (only its text stays, in its shard)
    store = JobStore.from_url(redis_url, shard_size=8, ttl_s=3600)
    assert all(store.files.load(job["id"], i) is None for i in range(4))
    assert store.answers(job["id"]) == dict.fromkeys(range(4), 1)


def test_a_mixed_upload_with_the_six_bad_kinds_classifies_the_rest_and_answers_each_bad_one(
    api: TestClient,
    worker: subprocess.Popen[bytes],
    extract_worker: subprocess.Popen[bytes],
    redis_url: str,
) -> None:
    """Issue 37's upload in small: good files between the six bad kinds, one 202; the bad
    ones found at upload and those found reading each end as that document's error_code,
    every document answered once, the job succeeded, and no Celery worker died."""
    from tests.support.files import BAD_KINDS as KINDS
    from tests.support.files import DOCX_TYPE, docx

    invoice = pdf(INVOICE, "Thank you for your business.")
    good = [
        ("invoice.pdf", invoice, "application/pdf"),
        ("letter.docx", docx("Dear customer, your order has shipped."), DOCX_TYPE),
        ("lease.txt", LEASE.encode(), "text/plain"),
    ]
    bad = [
        (f"bad-{i}", make(), declared, code) for i, (_, make, declared, code, _) in enumerate(KINDS)
    ]
    parts = [*good[:2], *[(n, d, t) for n, d, t, _ in bad], *good[2:]]
    resp = api.post("/v1/jobs", files=[("files", p) for p in parts])
    assert resp.status_code == 202, resp.text
    answer = resp.json()
    at_upload = {f["id"]: f["error_code"] for f in answer["failed"]}
    assert at_upload == {n: code for (n, _, _, code), k in zip(bad, KINDS, strict=True) if k[4]}
    job, _ = wait_until_final(api, answer["id"], timeout=300)
    assert job["status"] == "succeeded", job
    n = len(parts)
    assert job["progress"] == {"documents_done": n, "documents_failed": len(bad)}
    results = {r["id"]: r for r in all_results(api, job["id"])}
    assert list(results) == [p[0] for p in parts]
    assert {k: r["error_code"] for k, r in results.items() if k.startswith("bad-")} == {
        name: code for name, _, _, code in bad
    }
    assert all(results[k]["error"] for k in results if k.startswith("bad-"))
    assert all("label" in results[k] for k in ("invoice.pdf", "letter.docx", "lease.txt"))
    store = JobStore.from_url(redis_url, shard_size=8, ttl_s=3600)
    assert store.answers(job["id"]) == dict.fromkeys(range(n), 1)
    # a bad file costs its document, not a worker (an extract child it kills is replaced)
    assert worker.poll() is None and extract_worker.poll() is None
