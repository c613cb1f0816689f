"""Uploads of files (issue 21): multipart parts and JSON/NDJSON base64 documents, typed by
their bytes, capped in size, stored for the extract workers; a request that is bad as a
request (not base64, no content_type) refused with a 4xx that names the document, creating
nothing. A bad file is a failed document, not a refusal: tests/api/test_invalid_documents.py.
The job store and the broker are real (Redis); no worker reads this broker
(tests/api/conftest.py), so what an upload enqueued stays there.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from docq import keys
from docq.config import Settings
from docq.queue import EXTRACT_QUEUE, EXTRACT_SHARD, PRIORITY_QUEUE
from docq.store import JobStore
from docq.store.codec import unpack_shard
from tests.api.conftest import queued, unworked
from tests.support.files import DOCX_TYPE, INVOICE, docx, pdf, png

TEXT = "Lease agreement between the landlord and the tenant for the flat at 3 Elm Road"


@pytest.fixture
def nothing_created(api: TestClient, redis_url: str, broker: redis.Redis) -> Iterator[None]:
    """The test's uploads create no key of any job (record, shard, file) and enqueue nothing."""
    r = redis.Redis.from_url(redis_url)
    before = set(r.keys("docq:job:*"))
    yield
    assert set(r.keys("docq:job:*")) - before == set(), "a refused upload stored something"
    assert broker.dbsize() == 0, "a refused upload enqueued something"


def store_of(api: TestClient) -> JobStore:
    return api.app.state.resources.store  # type: ignore[no-any-return]


def shard_entries(api: TestClient, job_id: str) -> list[Any]:
    raw = store_of(api).r.get(keys.shard(job_id, 0))
    return unpack_shard(raw)  # type: ignore[no-any-return]


def test_multipart_pdf_png_docx_and_text_are_stored_for_the_extract_workers(
    api: TestClient, broker: redis.Redis
) -> None:
    files = {
        "invoice.pdf": (pdf(INVOICE), "application/pdf"),
        "scan.png": (png(), "image/png"),
        "letter.docx": (docx("Dear customer, your order has shipped."), DOCX_TYPE),
        "lease.txt": (TEXT.encode(), "text/plain"),
    }
    resp = api.post(
        "/v1/jobs",
        files=[("files", (name, data, ctype)) for name, (data, ctype) in files.items()],
        data={"model": "doc-type"},
    )
    assert resp.status_code == 202, resp.text
    job = resp.json()
    assert job["documents"] == 4 and job["status"] == "queued"
    store = store_of(api)
    assert store.get_job(job["id"]).files == 3
    assert shard_entries(api, job["id"]) == [
        ["invoice.pdf", None, {"type": "application/pdf", "state": "pending"}],
        ["scan.png", None, {"type": "image/png", "state": "pending"}],
        ["letter.docx", None, {"type": DOCX_TYPE, "state": "pending"}],
        ["lease.txt", TEXT],  # plain text is a text document, as before files
    ]
    for i, name in enumerate(["invoice.pdf", "scan.png", "letter.docx"]):
        assert store.files.load(job["id"], i) == files[name][0], f"{name}'s bytes changed"
    assert store.files.load(job["id"], 3) is None
    waiting = queued(broker, store_of(api).shard_size and 4)
    assert waiting[EXTRACT_QUEUE] == [(EXTRACT_SHARD, [job["id"], 0])]
    assert sum(len(v) for v in waiting.values()) == 1, "the shard must be read before classified"


def test_undeclared_parts_take_the_type_their_bytes_have(
    api: TestClient, broker: redis.Redis
) -> None:
    resp = api.post(
        "/v1/jobs",
        files=[
            ("files", ("a", pdf(INVOICE), "application/octet-stream")),
            ("files", ("b", b"<html><body><p>Hello invoice</p></body></html>", "")),
        ],
    )
    assert resp.status_code == 202, resp.text
    entries = shard_entries(api, resp.json()["id"])
    assert [e[2]["type"] for e in entries] == ["application/pdf", "text/html"]


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_base64_documents_in_json_and_ndjson(
    api: TestClient, broker: redis.Redis, fmt: str
) -> None:
    data = pdf(INVOICE, "Second page")
    docs = [
        {"id": "f", "content": base64.b64encode(data).decode(), "content_type": "application/pdf"},
        {"id": "t", "text": TEXT},
        {
            "id": "p",
            "content": base64.b64encode(TEXT.encode()).decode(),
            "content_type": "text/plain",
        },
    ]
    if fmt == "json":
        resp = api.post("/v1/jobs", json={"model": "doc-type", "documents": docs})
    else:
        body = "".join(json.dumps(d) + "\n" for d in docs)
        resp = api.post(
            "/v1/jobs?model=doc-type",
            content=body,
            headers={"content-type": "application/x-ndjson"},
        )
    assert resp.status_code == 202, resp.text
    job_id = resp.json()["id"]
    assert shard_entries(api, job_id) == [
        ["f", None, {"type": "application/pdf", "state": "pending"}],
        ["t", TEXT],
        ["p", TEXT],
    ]
    assert store_of(api).files.load(job_id, 0) == data
    assert store_of(api).get_job(job_id).files == 1


def test_a_text_only_upload_is_stored_and_enqueued_as_before_files(
    api: TestClient, broker: redis.Redis
) -> None:
    resp = api.post("/v1/jobs", files=[("files", ("a.txt", TEXT.encode(), "text/plain"))])
    assert resp.status_code == 202
    assert set(resp.json()) == {
        *("id", "status", "model", "documents", "created_at", "webhook"),
        *("documents_failed", "failed"),  # (issue 37: none here)
    }
    assert (resp.json()["documents_failed"], resp.json()["failed"]) == (0, [])
    job_id = resp.json()["id"]
    assert shard_entries(api, job_id) == [["a.txt", TEXT]]
    assert store_of(api).get_job(job_id).files == 0
    waiting = queued(broker, api.app.state.resources.settings.bulk_lanes)
    assert waiting[EXTRACT_QUEUE] == []
    assert waiting[PRIORITY_QUEUE] == [("docq.process_shard", [job_id, 0])]


def test_the_same_files_replay_an_idempotent_upload_other_files_are_refused(
    api: TestClient, broker: redis.Redis
) -> None:
    def send(data: bytes) -> Any:
        return api.post(
            "/v1/jobs",
            files=[("files", ("a.pdf", data, "application/pdf"))],
            headers={"idempotency-key": "files-1"},
        )

    first = send(pdf(INVOICE))
    assert first.status_code == 202
    again = send(pdf(INVOICE))
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
    other = send(pdf(INVOICE + " (amended)"))
    assert other.status_code == 409  # IdempotencyKeyReused is a Conflict
    assert other.json()["error"]["code"] == "idempotency_key_reused"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


BAD = [
    # (name, status, code, words of the message, request kwargs): the request is at fault
    (
        "JSON content not base64",
        422,
        "invalid_request",
        "document 0 ('n'): content: not base64",
        {
            "json": {
                "documents": [
                    {"id": "n", "content": "not base64!", "content_type": "application/pdf"}
                ]
            }
        },
    ),
    (
        "JSON file without its content_type",
        422,
        "invalid_request",
        "document 0: content_type: Field required",
        {"json": {"documents": [{"id": "n", "content": b64(pdf(INVOICE))}]}},
    ),
    (
        "JSON text and content at once",
        422,
        "invalid_request",
        "document 0: text",
        {
            "json": {
                "documents": [
                    {
                        "id": "n",
                        "text": "x",
                        "content": b64(pdf(INVOICE)),
                        "content_type": "application/pdf",
                    }
                ]
            }
        },
    ),
]


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    ("status", "code", "words", "kwargs"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_bad_requests_of_files_are_refused_and_create_nothing(
    api: TestClient, status: int, code: str, words: str, kwargs: dict[str, Any]
) -> None:
    resp = api.post("/v1/jobs", **kwargs)
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code
    assert words in error["message"]


@pytest.fixture(scope="module")
def capped(settings: Settings, auth_headers: dict[str, str]) -> Iterator[TestClient]:
    """An API whose files may be at most 2,000 bytes."""
    from api.main import create_app

    small = unworked(settings).model_copy(update={"max_file_bytes": 2000})
    with TestClient(create_app(small), headers=auth_headers) as client:
        yield client
