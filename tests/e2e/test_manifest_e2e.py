"""A job from object storage through the whole stack (docs/manifests.md): real Celery workers
(extract pool, bulk lane, webhooks), the session's tritonserver and Redis, the directory
object store on the real file system.

The manifest names NDJSON objects (one of them with a bad line and a repeated id), a text
file, a PDF, and an object deleted after the 202 and before any worker fetched it: the
job's tasks are held on a broker no worker reads until the object is gone, then handed to
the workers. Every document is answered once (the answers ledger), each bad one with its
code; the results are written back as NDJSON and the webhook event names the files.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from docq.config import Settings
from docq.queue import EXTRACT_QUEUE
from tests.api.conftest import unworked
from tests.conftest import TENANT
from tests.support.files import INVOICE, pdf
from tests.support.jobs import all_results, wait_until_final
from tests.support.manifests import ndjson, objects_root, put
from tests.support.polling import until
from tests.support.receiver import Receiver

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("worker", "extract_worker", "webhooks_worker"),
]

LINES = 30


def handed_to_workers(held: Settings, live: Settings) -> int:
    """Move the messages of the extract queue from `held`'s broker to `live`'s."""
    src = redis.Redis.from_url(held.celery_broker_url)
    dst = redis.Redis.from_url(live.celery_broker_url)
    moved = 0
    while (msg := src.rpop(EXTRACT_QUEUE)) is not None:
        dst.lpush(EXTRACT_QUEUE, msg)
        moved += 1
    return moved


def test_a_manifest_of_files_and_ndjson_objects_is_answered_once_per_document_and_written_back(
    api: TestClient, settings: Settings, auth_headers: dict[str, str]
) -> None:
    from api.main import create_app

    batch = f"e2e-{uuid.uuid4().hex[:8]}"
    docs: list[dict[str, Any]] = [
        {"id": f"n{i}", "text": f"INVOICE {i} total due {i * 3} EUR"} for i in range(LINES)
    ]
    body = ndjson(docs) + b'{"id": "n0", "text": "again"}\n' + b"not json\n"
    put(settings, TENANT, f"{batch}/lines.ndjson", body)
    put(settings, TENANT, f"{batch}/letter.txt", b"Dear customer, your order has shipped.")
    put(settings, TENANT, f"{batch}/invoice.pdf", pdf(INVOICE))
    gone = put(settings, TENANT, f"{batch}/gone.ndjson", ndjson([{"id": "g", "text": "x"}]))
    manifest = [f"{batch}/{x}" for x in ("lines.ndjson", "letter.txt", "invoice.pdf")]
    manifest.append(f"{batch}/gone.ndjson")

    receiver = Receiver(200)
    held = unworked(settings)
    redis.Redis.from_url(held.celery_broker_url).flushdb()  # (what other tests left there)
    with receiver.serve() as url, TestClient(create_app(held), headers=auth_headers) as holding:
        resp = holding.post(
            "/v1/jobs",
            json={
                "model": "doc-type",
                "manifest": {"objects": manifest},
                "results": f"{batch}/out/",
                "webhook": {"url": url, "secret": "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
            },
        )
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        gone.unlink()  # after the 202, before any worker fetched it
        # its parts: lines.ndjson, the files (a group), gone.ndjson
        assert handed_to_workers(held, settings) == 3
        wait_until_final(api, job_id, timeout=300)
        until(lambda: receiver.accepted, "the job's webhook event", timeout=120)
    # results_files is set by the write-back, a moment after the job turns final and before
    # its event is sent: read the job again after the event
    job = api.get(f"/v1/jobs/{job_id}").json()

    assert job["status"] == "succeeded", job
    assert job["documents"] == LINES + 2 + 2 + 1
    assert job["parts"] == {"total": 3, "read": 3}
    results = all_results(api, job_id, limit=9)
    codes = [(r["id"], r.get("error_code")) for r in results]
    assert codes == [
        *((d["id"], None) for d in docs),
        ("n0", "duplicate_id"),
        (f"{batch}/lines.ndjson@{len(body) - len(b'not json') - 1}", "invalid_line"),
        (f"{batch}/letter.txt", None),
        (f"{batch}/invoice.pdf", None),
        (f"{batch}/gone.ndjson", "missing"),
    ]
    assert all("label" in r for r in results if r.get("error_code") is None)
    store = api.app.state.resources.store
    ledger = store.answers(job_id)
    assert len(ledger) == len(results) and set(ledger.values()) == {1}, "each answered once"

    files = job["results_files"]
    assert files and all(f.startswith(settings.manifest_url) for f in files)
    root = objects_root(settings)
    written = [
        json.loads(line)
        for f in files
        for line in (root / f.removeprefix(settings.manifest_url).lstrip("/"))
        .read_text()
        .splitlines()
    ]
    assert written == results
    (event,) = receiver.accepted
    assert json.loads(event.body)["data"]["results_files"] == files


def test_a_cancelled_manifest_job_writes_back_what_was_answered_and_its_event_names_it(
    api: TestClient, settings: Settings, auth_headers: dict[str, str]
) -> None:
    """Only the first part's task reaches the workers before the cancel (the others wait on
    a broker no worker reads): its results are written back, the event names the files."""
    from api.main import create_app

    batch = f"e2e-{uuid.uuid4().hex[:8]}"
    docs: list[dict[str, Any]] = [
        {"id": f"c{i}", "text": f"INVOICE {i} total due {i * 3} EUR " + "x" * 200}
        for i in range(LINES)
    ]
    put(settings, TENANT, f"{batch}/lines.ndjson", ndjson(docs))  # parts: 4 KiB, then the rest
    put(settings, TENANT, f"{batch}/letter.txt", b"Dear customer, your order has shipped.")
    manifest = [f"{batch}/lines.ndjson", f"{batch}/letter.txt"]  # (a file: via extract)

    receiver = Receiver(200)
    held = unworked(settings)
    redis.Redis.from_url(held.celery_broker_url).flushdb()
    with receiver.serve() as url, TestClient(create_app(held), headers=auth_headers) as holding:
        resp = holding.post(
            "/v1/jobs",
            json={
                "model": "doc-type",
                "manifest": {"objects": manifest},
                "results": f"{batch}/out/",
                "webhook": {"url": url, "secret": "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
            },
        )
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        src = redis.Redis.from_url(held.celery_broker_url)
        first = src.rpop(EXTRACT_QUEUE)  # part 0's task: the first sent
        assert first is not None and src.llen(EXTRACT_QUEUE) == 2
        redis.Redis.from_url(settings.celery_broker_url).lpush(EXTRACT_QUEUE, first)

        def part_answered() -> dict[str, Any] | None:
            job = api.get(f"/v1/jobs/{job_id}").json()
            done = job["progress"]["documents_done"]
            return job if job["parts"]["read"] == 1 and done == job["documents"] > 0 else None

        before = until(part_answered, "the first part's results", timeout=300)
        cancelled = api.delete(f"/v1/jobs/{job_id}")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        job = until(
            lambda: (j := api.get(f"/v1/jobs/{job_id}").json())["results_files"] and j,
            "the results written back",
            timeout=120,
        )
        until(lambda: receiver.accepted, "the job's webhook event", timeout=120)

    answered = all_results(api, job_id)
    assert 0 < len(answered) == before["documents"] < LINES
    assert [r["id"] for r in answered] == [d["id"] for d in docs[: len(answered)]]
    root = objects_root(settings)
    written = [
        json.loads(line)
        for f in job["results_files"]
        for line in (root / f.removeprefix(settings.manifest_url).lstrip("/"))
        .read_text()
        .splitlines()
    ]
    assert written == answered
    (event,) = receiver.accepted
    body = json.loads(event.body)
    assert body["type"] == "job.cancelled"
    assert body["data"]["results_files"] == job["results_files"]


def test_a_manifest_job_past_its_cap_classifies_up_to_it_and_names_what_it_left(
    settings: Settings, auth_headers: dict[str, str]
) -> None:
    """The cap is the API's setting, kept on the job: the session's workers apply it. One
    part (under 4 KiB), so that which documents fit does not depend on which worker reads
    first (tests/workers/test_manifest_limits.py cuts across parts)."""
    from api.main import create_app

    batch = f"e2e-{uuid.uuid4().hex[:8]}"
    docs: list[dict[str, Any]] = [{"id": f"k{i}", "text": f"INVOICE {i} due"} for i in range(LINES)]
    body = ndjson(docs)
    assert len(body) < 4096
    put(settings, TENANT, f"{batch}/lines.ndjson", body)
    capped = settings.model_copy(update={"manifest_max_documents": 5})
    with TestClient(create_app(capped), headers=auth_headers) as api:
        resp = api.post(
            "/v1/jobs",
            json={"model": "doc-type", "manifest": {"objects": [f"{batch}/lines.ndjson"]}},
        )
        assert resp.status_code == 202, resp.text
        job, _ = wait_until_final(api, resp.json()["id"], timeout=300)
        results = all_results(api, job["id"])

    assert job["status"] == "succeeded", job
    assert [r["id"] for r in results[:5]] == [d["id"] for d in docs[:5]]
    assert all("label" in r for r in results[:5])
    (rest,) = results[5:]
    assert rest["error_code"] == "too_many_documents", rest
    assert rest["id"] == f"{batch}/lines.ndjson@0-{len(body)}"
    assert f"the last {LINES - 5} documents" in rest["error"]
    assert job["documents"] == 6 and job["progress"]["documents_failed"] == 1
