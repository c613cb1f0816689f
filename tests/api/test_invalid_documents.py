"""Per-document outcomes at upload (issue 37): a bad file is accepted as a failed document
(the 202 counts and lists it, its shard entry is failed with its code, its bytes are not
kept) and the rest of the upload is stored; `?on_invalid=reject` refuses the upload listing
every bad file; what is wrong with the request itself still refuses it, creating nothing.
The job store and the broker are real (Redis); no worker reads this broker.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient

from docq import keys
from docq.config import Settings
from docq.queue import EXTRACT_QUEUE
from docq.store import JobStore
from docq.store.codec import unpack_shard
from tests.api.conftest import queued, unworked
from tests.files import DOCX_TYPE, INVOICE, docx, pdf, png

PDF = "application/pdf"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def nothing_created(api: TestClient, redis_url: str, broker: redis.Redis) -> Iterator[None]:
    """The test's uploads create no key of any job and enqueue nothing."""
    r = redis.Redis.from_url(redis_url)
    before = set(r.keys("docq:job:*"))
    yield
    assert set(r.keys("docq:job:*")) - before == set(), "a refused upload stored something"
    assert broker.dbsize() == 0, "a refused upload enqueued something"


def store_of(api: TestClient) -> JobStore:
    return api.app.state.resources.store  # type: ignore[no-any-return]


def entries(api: TestClient, job_id: str) -> list[Any]:
    """Every stored entry of the job, over its shards, in upload order."""
    store = store_of(api)
    shards = store.get_job(job_id).shards
    return [e for n in range(shards) for e in unpack_shard(store.r.get(keys.shard(job_id, n)))]


# (name, bytes, declared type, the code, words of the message): every bad file the API
# itself can tell at upload. (Encrypted, truncated, a bomb, too many pixels: the worker
# reads those, tests/test_files_e2e.py.)
BAD = [
    ("random.pdf", bytes(range(1, 256)) * 8, PDF, "type_mismatch", "declared application/pdf"),
    ("empty.pdf", b"", PDF, "empty", "empty (0 bytes)"),
    ("fake.pdf", png(), PDF, "type_mismatch", "its bytes are image/png"),
    ("old.doc", b"\xd0\xcf\x11\xe0" + bytes(60), "application/msword", "unsupported_type", "word"),
    ("blob.bin", bytes(range(256)) * 4, "application/octet-stream", "unsupported_type", "none"),
    ("latin1.txt", "caf\u00e9 cr\u00e8me".encode("latin-1"), "text/plain", "not_utf8", "UTF-8"),
    ("nul.txt", b"name\x00value", "text/plain", "not_utf8", "NUL"),
    ("blank.txt", b" \n\t ", "text/plain", "no_text", "whitespace"),
    ("page.html", "<p>caf\u00e9</p>".encode("latin-1"), "text/html", "not_utf8", "UTF-8"),
]
GOOD = [
    ("invoice.pdf", pdf(INVOICE), PDF),
    ("letter.docx", docx("Dear customer, your order has shipped."), DOCX_TYPE),
    ("lease.txt", b"Lease agreement for the flat at 3 Elm Road", "text/plain"),
]


def mixed_parts() -> list[tuple[str, tuple[str, bytes, str]]]:
    """The good files with every bad one between them."""
    parts = [("files", GOOD[0]), *[("files", (n, d, t)) for n, d, t, _, _ in BAD]]
    return [*parts, *[("files", g) for g in GOOD[1:]]]


def test_bad_files_are_accepted_as_failed_documents_and_the_rest_is_stored(
    api: TestClient, broker: redis.Redis
) -> None:
    resp = api.post("/v1/jobs", files=mixed_parts(), data={"model": "doc-type"})
    assert resp.status_code == 202, resp.text
    job = resp.json()
    assert (job["documents"], job["documents_failed"]) == (len(BAD) + 3, len(BAD))
    got = {f["id"]: f for f in job["failed"]}
    assert [f["document"] for f in job["failed"]] == list(range(1, len(BAD) + 1))
    for name, _, _, code, words in BAD:
        assert got[name]["error_code"] == code, got[name]
        assert words in got[name]["message"], got[name]
    stored = entries(api, job["id"])
    assert stored[0] == ["invoice.pdf", None, {"type": PDF, "state": "pending"}]
    for i, (name, _, _, code, _) in enumerate(BAD, start=1):
        assert stored[i][0] == name and stored[i][1] is None
        assert stored[i][2]["state"] == "failed" and stored[i][2]["code"] == code
        assert store_of(api).files.load(job["id"], i) is None, "a bad file's bytes were kept"
    assert stored[-1] == ["lease.txt", "Lease agreement for the flat at 3 Elm Road"]
    record = store_of(api).get_job(job["id"])
    assert record.files == 2  # the files left to read: the PDF and the DOCX
    assert (record.documents_done, record.documents_failed) == (0, 0)  # counted by the worker
    shards = {tuple(args) for _, args in queued(broker, 4)[EXTRACT_QUEUE]}
    assert shards == {(job["id"], n) for n in range(record.shards)}


@pytest.mark.parametrize("fmt", ["json", "ndjson"])
def test_base64_files_fail_alike(api: TestClient, broker: redis.Redis, fmt: str) -> None:
    docs = [{"id": n, "content": b64(d), "content_type": t} for n, d, t, _, _ in BAD]
    docs.append({"id": "ok", "text": "INVOICE 4711 total due"})
    if fmt == "json":
        resp = api.post("/v1/jobs", json={"documents": docs})
    else:
        import json

        body = "".join(json.dumps(d) + "\n" for d in docs)
        resp = api.post("/v1/jobs", content=body, headers={"content-type": "application/x-ndjson"})
    assert resp.status_code == 202, resp.text
    codes = {f["id"]: f["error_code"] for f in resp.json()["failed"]}
    assert codes == {n: code for n, _, _, code, _ in BAD}


def test_a_multipart_file_not_utf8_is_a_failed_document_no_longer_a_422(
    api: TestClient, broker: redis.Redis
) -> None:
    resp = api.post("/v1/jobs", files=[("files", ("bad.txt", b"\xff\xfe\xfa"))])
    assert resp.status_code == 202, resp.text
    (failed,) = resp.json()["failed"]
    assert (failed["id"], failed["error_code"]) == ("bad.txt", "not_utf8")


@pytest.fixture(scope="module")
def capped(settings: Settings, auth_headers: dict[str, str]) -> Iterator[TestClient]:
    """An API whose files may be at most 2,000 bytes."""
    from api.main import create_app

    small = unworked(settings).model_copy(update={"max_file_bytes": 2000})
    with TestClient(create_app(small), headers=auth_headers) as client:
        yield client


@pytest.mark.parametrize("form", ["multipart", "multipart-undeclared", "json"])
def test_a_file_over_its_cap_is_a_failed_document(capped: TestClient, form: str) -> None:
    data = pdf(*[INVOICE] * 8)
    assert len(data) > 2000
    small = pdf(INVOICE)
    if form == "json":
        kwargs: dict[str, Any] = {
            "json": {
                "documents": [
                    {"id": "big.pdf", "content": b64(data), "content_type": PDF},
                    {"id": "small.pdf", "content": b64(small), "content_type": PDF},
                ]
            }
        }
    else:
        ctype = PDF if form == "multipart" else "application/octet-stream"
        kwargs = {
            "files": [("files", ("big.pdf", data, ctype)), ("files", ("small.pdf", small, PDF))]
        }
    resp = capped.post("/v1/jobs", **kwargs)
    assert resp.status_code == 202, resp.text
    (failed,) = resp.json()["failed"]
    assert (failed["id"], failed["error_code"]) == ("big.pdf", "too_large")
    assert "larger than 2,000 bytes" in failed["message"]
    assert capped.app.state.resources.store.files.load(resp.json()["id"], 1) == small


@pytest.mark.usefixtures("nothing_created")
def test_on_invalid_reject_refuses_the_upload_listing_every_bad_file(api: TestClient) -> None:
    resp = api.post("/v1/jobs?on_invalid=reject", files=mixed_parts())
    assert resp.status_code == 422, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_documents"
    assert f"{len(BAD)} of {len(BAD) + 3} documents are invalid" in error["message"]
    listed = [(e["document"], e["id"], e["error_code"]) for e in error["detail"]["errors"]]
    assert listed == [(i, n, code) for i, (n, _, _, code, _) in enumerate(BAD, start=1)]
    assert all(e["message"] for e in error["detail"]["errors"])


def test_on_invalid_reject_takes_an_upload_without_bad_files(
    api: TestClient, broker: redis.Redis
) -> None:
    resp = api.post("/v1/jobs?on_invalid=reject", files=[("files", g) for g in GOOD])
    assert resp.status_code == 202, resp.text
    assert resp.json()["documents_failed"] == 0


@pytest.mark.usefixtures("nothing_created")
@pytest.mark.parametrize(
    ("extra", "status", "code"),
    [
        ({"data": {"model": "no-such-model"}}, 422, "unknown_model"),
        ({"data": {"webhook_url": "ftp://127.0.0.1/x"}}, 422, "webhook_refused"),
        ({"params": {"on_invalid": "sometimes"}}, 422, "invalid_request"),
    ],
    ids=["unknown model", "bad webhook", "unknown on_invalid"],
)
def test_request_problems_still_refuse_an_upload_with_bad_files(
    api: TestClient, extra: dict[str, Any], status: int, code: str
) -> None:
    resp = api.post("/v1/jobs", files=mixed_parts(), **extra)
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["code"] == code


@pytest.mark.usefixtures("nothing_created")
def test_a_duplicate_id_refuses_even_when_the_duplicate_is_a_bad_file(api: TestClient) -> None:
    parts = [("files", ("a.pdf", pdf(INVOICE), PDF)), ("files", ("a.pdf", b"", PDF))]
    resp = api.post("/v1/jobs", files=parts)
    assert resp.status_code == 422, resp.text
    assert "duplicate" in resp.json()["error"]["message"]


def test_an_upload_of_bad_files_only_is_a_job_for_the_worker_to_finish(
    api: TestClient, broker: redis.Redis
) -> None:
    """Every document failed: the job is created all the same, and its shard goes to the
    workers, who answer each document once and finalize it as any job (tests/workers)."""
    resp = api.post("/v1/jobs", files=[("files", (n, d, t)) for n, d, t, _, _ in BAD])
    assert resp.status_code == 202, resp.text
    job = resp.json()
    assert job["documents"] == job["documents_failed"] == len(BAD)
    assert store_of(api).get_job(job["id"]).files == 0
    waiting = queued(broker, 4)
    assert waiting[EXTRACT_QUEUE] == []  # nothing to read: classified (answered) at once
    shards = sorted(tuple(args) for q in waiting.values() for _, args in q)
    assert shards == [(job["id"], n) for n in range(store_of(api).get_job(job["id"]).shards)]


def test_a_replayed_upload_answers_its_failed_documents_again(
    api: TestClient, broker: redis.Redis
) -> None:
    def send() -> Any:
        return api.post("/v1/jobs", files=mixed_parts(), headers={"idempotency-key": "bad-1"})

    first = send()
    assert first.status_code == 202, first.text
    again = send()
    assert again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["failed"] == first.json()["failed"]
    assert again.json()["documents_failed"] == len(BAD)
