"""The S3 blob store failing under real processes loses no document: the S3 server cut off
for 30 s while a job's files are read and while uploads come in, and an extract worker
SIGKILLed after it fetched a blob and before it stored the file's text.

The S3 server is moto's server mode, an S3 *emulator* (tests/support/s3.py: no real
S3-compatible server installs here from the registries), a process of its own reached by
boto3 over HTTP. It is cut off with SIGSTOP, as a hung server or a partition that drops
packets is: connections are accepted by the kernel and never answered (a restart would
lose its objects, which live in its memory). Every document is answered once (the job
store's ledger, `answers`) with the label a fault-free run gave, and after the orphan
sweep's short grace the bucket holds nothing: no object, no unfinished multipart upload.
"""

from __future__ import annotations

import base64
import os
import re
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from devstack.services import api_server, celery_worker, redis_server, wait_for
from docq import keys
from docq.blobs import BlobRef
from docq.config import Settings
from docq.store import JobStore
from tests.conftest import settings_env, tenant_headers
from tests.support.files import INVOICE, pdf
from tests.support.polling import until
from tests.support.s3 import S3Server, objects, s3_emulator_process, s3_settings

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

BUCKET = "faults"
READY_S = 180  # a worker's start-up on a busy 2-core machine (never shortened)
OUTAGE_S = 30.0
UPLOAD_TIMEOUT_S = 28.0  # an upload during the outage is answered within it, or it hangs
PDF = "application/pdf"
PAGED, PAGES = 8, 40
B64_DOCUMENT = {
    "id": "b.pdf",
    "content": base64.b64encode(pdf(INVOICE)).decode(),
    "content_type": PDF,
}


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    with s3_emulator_process(tmp_path / "moto.log") as server:
        yield server


@pytest.fixture
def own_settings(tmp_path: Path, settings: Settings, s3: S3Server) -> Iterator[Settings]:
    """The session's settings on a Redis of their own, blobs in an S3 bucket, quick
    retries, short leases and a short orphan grace (longer than storing an upload takes)."""
    with redis_server(tmp_path / "redis") as redis_url:
        yield s3_settings(settings, s3.url, BUCKET).model_copy(
            update={
                "redis_url": redis_url,
                "task_retry_backoff_s": 1,
                "task_retry_backoff_max_s": 2,
                "shard_lease_s": 4.0,
                "sweep_interval_s": 1.0,
                "audit_interval_s": 2.0,
                "blob_orphan_grace_s": 10.0,
                "blob_sweep_interval_s": 1.0,
                "extract_timeout_s": 600.0,  # a busy machine reads slowly: no `timeout` here
            }
        )


def pdfs(n: int, pages: int = 1) -> list[tuple[str, bytes]]:
    """n PDFs of the demo corpus's documents (invoices, receipts, orders...: several labels),
    their text kept to the characters a hand-written PDF string takes, on the first of
    `pages` pages."""
    from corpus.doc_type import generate

    made = []
    for d in generate(n, seed=37):
        lines = [re.sub(r"[^A-Za-z0-9 .,:;/#%&@+-]", "", line) for line in d.text.splitlines()]
        text = "\n".join(line for line in lines if line.strip())[:400]
        # more pages are slower to read, not to classify: a page number each
        made.append((f"{d.id}.pdf", pdf(text, *[f"page {n}" for n in range(2, pages + 1)])))
    return made


def multipart(files: list[tuple[str, bytes]]) -> list[tuple[str, Any]]:
    return [("files", (name, data, "application/pdf")) for name, data in files]


def labels(api: httpx.Client, job_id: str) -> list[tuple[str, str]]:
    until(lambda: api.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded", job_id, 300, 0.2)
    page = api.get(f"/v1/jobs/{job_id}/results", params={"limit": 1000}).json()
    assert page["next_cursor"] is None
    return [(r["id"], r["label"]) for r in page["data"]]


@pytest.mark.timeout(600)
def test_the_s3_store_cut_off_for_30s_answers_uploads_503_and_loses_no_document(
    own_settings: Settings, s3: S3Server, tmp_path: Path
) -> None:
    env = settings_env(own_settings)
    files = pdfs(16)
    store = JobStore.from_url(own_settings.redis_url, shard_size=8, ttl_s=3600)
    extract_log = tmp_path / "extract.log"
    with (
        api_server(env, tmp_path / "api.log") as url,
        httpx.Client(base_url=url, headers=tenant_headers(own_settings), timeout=60) as api,
        celery_worker(
            env, tmp_path / "bulk.log", "cpu,cpu-priority", "bulk", concurrency=2, ready_s=READY_S
        ),
        celery_worker(env, extract_log, "extract", "extract", concurrency=1, ready_s=READY_S),
    ):
        reference = api.post("/v1/jobs", files=multipart(files))
        assert reference.status_code == 202, reference.text
        fault_free = labels(api, reference.json()["id"])
        assert len({label for _, label in fault_free}) > 1, "one label: a weak comparison"

        job = api.post("/v1/jobs", files=multipart(files))
        assert job.status_code == 202, job.text
        os.kill(s3.proc.pid, signal.SIGSTOP)  # the store stops answering, its files unread
        stopped = time.monotonic()
        try:
            with ThreadPoolExecutor(2) as pool:
                uploads = [
                    pool.submit(
                        api.post, "/v1/jobs", files=multipart(files[:1]), timeout=UPLOAD_TIMEOUT_S
                    ),
                    pool.submit(
                        api.post,
                        "/v1/jobs",
                        json={"documents": [B64_DOCUMENT]},
                        timeout=UPLOAD_TIMEOUT_S,
                    ),
                ]
                refused = [u.result() for u in uploads]
            wait_for(lambda: "retrying in" in extract_log.read_text(errors="replace"), 60, "retry")
            assert api.get(f"/v1/jobs/{job.json()['id']}").json()["status"] != "succeeded"
            time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
        finally:
            os.kill(s3.proc.pid, signal.SIGCONT)

        for answer in refused:
            assert answer.status_code == 503, answer.text
            assert answer.json()["error"]["code"] == "blob_store_unavailable", answer.text
            assert "retry-after" in answer.headers
        assert labels(api, job.json()["id"]) == fault_free
        assert store.answers(job.json()["id"]) == dict.fromkeys(range(len(files)), 1)
        assert "blob store" in extract_log.read_text(errors="replace")
        until(lambda: objects(s3.url, BUCKET) == [], "an empty bucket after the sweep", 120, 0.5)


def fetched(log: Path, store: JobStore, job_id: str, files: int) -> bool:
    """Whether the S3 server's request log shows a GET of a blob of `job_id`'s files: an
    extract worker has fetched one (it is read once its reference is)."""
    refs = [store.r.get(keys.file(job_id, i)) for i in range(files)]
    names = [BlobRef.decode(raw).key for raw in refs if raw is not None]
    requests = log.read_text("latin-1")
    return any(f'"GET /{BUCKET}/blobs/{name} HTTP' in requests for name in names)


@pytest.mark.timeout(600)
def test_an_extract_worker_killed_between_fetch_and_store_answers_each_document_once(
    own_settings: Settings, s3: S3Server, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from api.main import create_app

    env = settings_env(own_settings)
    files = pdfs(PAGED, pages=PAGES)  # one shard: it is read for seconds after a first fetch
    moto_log = tmp_path / "moto.log"
    store = JobStore.from_url(own_settings.redis_url, shard_size=8, ttl_s=3600)
    with (
        TestClient(create_app(own_settings), headers=tenant_headers(own_settings)) as api,
        celery_worker(
            env, tmp_path / "bulk.log", "cpu,cpu-priority", "bulk", concurrency=2, ready_s=READY_S
        ),
    ):
        with celery_worker(
            env, tmp_path / "victim.log", "extract", "victim", ready_s=READY_S
        ) as victim:
            created = api.post("/v1/jobs", files=multipart(files))
            assert created.status_code == 202, created.text
            job_id = created.json()["id"]
            until(lambda: fetched(moto_log, store, job_id, PAGED), "a blob fetched", 120, 0.01)
            os.kill(victim.pid, signal.SIGKILL)
            victim.wait(timeout=30)
        job = store.get_job(job_id)
        (shard,) = [store.load_shard(job, n) for n in range(job.shards)]
        assert all(d.pending for d in shard), "the worker stored a text before the kill"
        assert objects(s3.url, BUCKET), "nothing left to read after the kill"
        with celery_worker(
            env, tmp_path / "next.log", "extract", "next", concurrency=2, ready_s=READY_S
        ):
            until(lambda: api.get(f"/v1/jobs/{job_id}").json()["status"] == "succeeded", "job", 480)

        results = api.get(f"/v1/jobs/{job_id}/results", params={"limit": 100}).json()["data"]
        assert [r["id"] for r in results] == [name for name, _ in files]  # each once, in order
        assert all(r["pages"] == PAGES and "label" in r for r in results), results
        assert store.answers(job_id) == dict.fromkeys(range(len(files)), 1)
        logs = (tmp_path / "bulk.log").read_text(errors="replace")
        assert "lease expired" in logs or "its worker was lost holding its message" in logs
        until(lambda: objects(s3.url, BUCKET) == [], "an empty bucket after the sweep", 120, 0.5)
