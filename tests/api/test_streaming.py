"""A multipart upload's PDFs and images stream into the blob store (api/streaming.py) and
Redis keeps references, against a real Redis and a real directory store.

The blob store's own tests (both stores, S3 on an emulator) are tests/docq/blobs; the
extract workers reading and deleting the blobs, tests/test_blobs_e2e.py.
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from fastapi import Request
from fastapi.testclient import TestClient

from api.uploads import parse_upload
from devstack.services import redis_server
from docq import keys
from docq.blobs import BlobRef
from docq.config import Settings
from docq.errors import PayloadTooLarge
from docq.schemas import FileDocumentIn, JobCreate
from docq.store import JobStore
from tests.api.conftest import unworked
from tests.conftest import tenant_headers
from tests.support.files import INVOICE, pdf, png

MB = 1024 * 1024


def big_pdf(n: int, size: int = MB) -> bytes:
    """A valid PDF padded (a comment after its end) to `size` bytes, different for each n."""
    data = pdf(f"{INVOICE}\nInvoice number {n}")
    return data + b"%" + bytes([65 + n % 26]) * (size - len(data) - 1)


def chunked(files: list[tuple[str, tuple[str, bytes, str]]]) -> tuple[list[bytes], str]:
    """A multipart body as a client streams it, in 64 KiB chunks, and its content type."""
    request = httpx.Request("POST", "http://api/v1/jobs", files=files)
    body = request.read()
    chunks = [body[i : i + 64 * 1024] for i in range(0, len(body), 64 * 1024)]
    return chunks, request.headers["content-type"]


def parse_streamed(
    api: TestClient, chunks: list[bytes], ctype: str, seen: Callable[[int], None]
) -> JobCreate:
    """parse_upload reading `chunks` one ASGI message at a time, as uvicorn hands a body
    over (TestClient sends a body in one message); `seen(n)` before the n-th is given."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/jobs",
        "query_string": b"",
        "headers": [(b"content-type", ctype.encode())],
        "app": api.app,
    }
    sent = 0

    async def receive() -> dict[str, Any]:
        nonlocal sent
        seen(sent)
        sent += 1
        last = sent >= len(chunks)
        return {"type": "http.request", "body": chunks[sent - 1], "more_body": not last}

    settings = api.app.state.resources.settings  # type: ignore[attr-defined]
    return asyncio.run(parse_upload(Request(scope, receive), settings))


def blob_files(root: Path) -> list[str]:
    """Every blob (and partial write) under a directory store's root."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def committed(root: Path) -> list[str]:
    """The blobs under a directory store's root, not its writes in progress."""
    return [name for name in blob_files(root) if not name.startswith(".partial/")]


@contextmanager
def api_on(settings: Settings, **update: Any) -> Iterator[tuple[TestClient, JobStore]]:
    from api.main import create_app

    own = unworked(settings).model_copy(update=update)
    with TestClient(create_app(own), headers=tenant_headers(own)) as client:
        yield client, client.app.state.resources.store  # type: ignore[attr-defined]


@pytest.fixture
def small_redis(tmp_path: Path) -> Iterator[tuple[str, redis.Redis]]:
    """A Redis of its own whose maxmemory leaves 512 KiB free (set once the API is up)."""
    with redis_server(tmp_path / "redis") as url:
        yield url, redis.Redis.from_url(url)


def test_files_larger_than_redis_memory_stream_to_the_store_and_redis_keeps_references(
    settings: Settings, tmp_path: Path, small_redis: tuple[str, redis.Redis]
) -> None:
    """Four 1 MB PDFs and a scan, on a Redis with 512 KiB free: before blobs, 503
    store_full; now 202, each file a reference of less than 200 bytes in Redis."""
    url, r = small_redis
    root = tmp_path / "blobs"
    with api_on(settings, redis_url=url, blob_url=root.as_uri()) as (api, store):
        r.config_set("maxmemory-policy", "noeviction")
        r.config_set("maxmemory", int(r.info("memory")["used_memory"]) + 512 * 1024)
        files = [(f"{n}.pdf", big_pdf(n), "application/pdf") for n in range(4)]
        files.append(("scan.png", png(), "image/png"))
        resp = api.post("/v1/jobs", files=[("files", f) for f in files])
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        for i, (_, data, _) in enumerate(files):
            raw = r.get(keys.file(job_id, i))
            assert raw is not None and len(raw) < 200, "Redis holds the bytes, not a reference"
            assert store.files.load(job_id, i) == data
        names = blob_files(root)
        assert len(names) == 5 and all(n.count("/") == 1 for n in names), names
        refs = [BlobRef.decode(r.get(keys.file(job_id, i)) or b"") for i in range(5)]
        assert sorted(ref.key for ref in refs) == names


def test_files_stream_into_the_store_as_they_arrive_and_a_refused_upload_leaves_none(
    settings: Settings, tmp_path: Path
) -> None:
    """Chunk by chunk: a PDF is a committed blob before the body's end has arrived; a
    third file over a cap of two documents is refused as its headers arrive, and the two
    blobs stored before it are deleted before the 413."""
    root = tmp_path / "blobs"
    with api_on(settings, blob_url=root.as_uri(), max_documents_per_job=2) as (api, _):
        two = [("files", (f"{n}.pdf", big_pdf(n), "application/pdf")) for n in range(2)]
        chunks, ctype = chunked(two)
        stored_midway: list[str] = []

        def seen(n: int) -> None:
            if n == len(chunks) - 1:  # the last chunk is yet to come
                stored_midway.extend(committed(root))

        job = parse_streamed(api, chunks, ctype, seen)
        assert len(stored_midway) == 1, "the first PDF was not stored while the body streamed"
        refs = [d.data for d in job.documents if isinstance(d, FileDocumentIn)]
        assert len(refs) == 2 and all(isinstance(r, BlobRef) for r in refs)
        assert sorted(r.key for r in refs if isinstance(r, BlobRef)) == blob_files(root)

        before = set(blob_files(root))
        three = [("files", (f"{n}.pdf", big_pdf(n), "application/pdf")) for n in range(3)]
        chunks, ctype = chunked(three)
        midway: list[str] = []
        with pytest.raises(PayloadTooLarge, match="more than 2 files"):
            parse_streamed(api, chunks, ctype, lambda n: midway.extend(committed(root)))
        assert set(midway) - before, "no PDF was stored before the third file was refused"
        assert set(blob_files(root)) == before, "a refused upload left its blobs"


def test_pdfs_do_not_count_against_the_memory_cap_text_does(
    settings: Settings, tmp_path: Path
) -> None:
    """max_upload_bytes bounds what an upload holds in memory: three 1 MB PDFs pass a cap of
    1 MB (they stream to the store), two 600 KB text files do not."""
    root = tmp_path / "blobs"
    with api_on(settings, blob_url=root.as_uri(), max_upload_bytes=MB) as (api, _):
        pdfs = [("files", (f"{n}.pdf", big_pdf(n), "application/pdf")) for n in range(3)]
        first = api.post("/v1/jobs", files=pdfs)
        assert first.status_code == 202, first.text
        text = ("invoice total due " * 40_000)[: 600 * 1024].encode()
        texts = [("files", (f"{n}.txt", text, "text/plain")) for n in range(2)]
        resp = api.post("/v1/jobs", files=texts)
        assert resp.status_code == 413, resp.text
        assert "stream to the blob store" in resp.json()["error"]["message"]


@pytest.mark.parametrize("form", ["multipart", "json"])
def test_a_blob_store_that_fails_is_503_and_nothing_is_created(
    settings: Settings, tmp_path: Path, redis_url: str, form: str
) -> None:
    (tmp_path / "a-file").write_bytes(b"")  # a store below a file cannot be written
    down = (tmp_path / "a-file" / "blobs").as_uri()
    r = redis.Redis.from_url(redis_url)
    before = set(r.keys("docq:job:*"))
    with api_on(settings, blob_url=down) as (api, _):
        data = pdf(INVOICE)
        if form == "multipart":
            resp = api.post("/v1/jobs", files=[("files", ("a.pdf", data, "application/pdf"))])
        else:
            doc = {"id": "a.pdf", "content": base64.b64encode(data).decode()}
            resp = api.post(
                "/v1/jobs", json={"documents": [{**doc, "content_type": "application/pdf"}]}
            )
    assert resp.status_code == 503, resp.text
    error = resp.json()["error"]
    assert error["code"] == "blob_store_unavailable" and "blob store" in error["message"]
    assert resp.headers["retry-after"]
    assert set(r.keys("docq:job:*")) == before, "a refused upload stored something"


def test_blobs_of_an_upload_refused_after_parsing_or_replayed_are_deleted_at_once(
    settings: Settings, tmp_path: Path
) -> None:
    """An unknown model, a tenant over its limits and a replayed Idempotency-Key refuse
    or answer an upload only once its PDFs are in the store: its blobs are deleted before
    the answer, not left to the sweep; those of the job the first upload made are kept."""
    root = tmp_path / "blobs"
    files = [("files", (f"{n}.pdf", big_pdf(n), "application/pdf")) for n in range(2)]
    with api_on(
        settings, blob_url=root.as_uri(), tenant_max_queued_documents=3, max_documents_per_job=3
    ) as (
        api,
        _,
    ):
        own = tenant_headers(settings, f"refusals-{uuid.uuid4().hex}")  # no earlier job counts
        unknown = api.post("/v1/jobs", files=files, data={"model": "x"}, headers=own)
        assert unknown.status_code in (400, 404, 422), unknown.text
        assert blob_files(root) == [], "the blobs of an upload for an unknown model stayed"

        key = {**own, "Idempotency-Key": "refused-blobs"}
        first = api.post("/v1/jobs", files=files, headers=key)
        assert first.status_code == 202, first.text
        kept = blob_files(root)
        assert len(kept) == 2, kept
        again = api.post("/v1/jobs", files=files, headers=key)
        assert again.status_code == 200 and again.json()["id"] == first.json()["id"], again.text
        assert blob_files(root) == kept, "the replayed upload's blobs stayed (or the job's went)"

        over = api.post("/v1/jobs", files=files, headers=own)  # 2 queued + 2 > 3
        assert over.status_code == 429, over.text
        assert blob_files(root) == kept, "the blobs of an upload over the tenant's limit stayed"
