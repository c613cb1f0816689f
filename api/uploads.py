"""Read an upload in any of the three body formats (formats.py) into one validated `JobCreate`.

- `application/json`: `{"model": ..., "documents": [{"id", "text"}, ...]}`
- `application/x-ndjson`: one `{"id", "text"}` per line, model in `?model=`
- `multipart/form-data`: files in `files` (id = file name), model in the `model` field

A document may be a file instead of text: a multipart part of any type docq reads (PDF,
PNG/JPEG/TIFF, DOCX, HTML, text), or in JSON/NDJSON `{"id", "content": base64,
"content_type"}`. Its type is judged from its bytes and its size capped (api/files.py).

The webhook is `"webhook": {"url", "secret"}` in JSON, and `webhook_url` / `webhook_secret`
query parameters (NDJSON) or form fields (multipart) otherwise.

Errors name the document (position and id) and the field, so a client can fix its upload.

Every limit is enforced while the body streams in, before it is held: the byte count on
the stream (whatever Content-Length says), each multipart file's size, the number of
files, and the number of documents (parsing stops at the cap). A multipart upload's PDFs
and images stream into the blob store as they arrive (api/streaming.py): its cap is
`max_stored_upload_bytes`, a bound of the store, and what it holds in memory (text, HTML,
DOCX parts) stays within `max_upload_bytes`; a refused upload's blobs are deleted.
Decoding and validating run in a worker thread, at most `max_parsing_uploads` at once per
process (one more gets 429), so a large upload never stalls the event loop (`/healthz`
keeps answering).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pydantic
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from prometheus_client import Gauge

from api.deps import get_resources
from api.files import resolve, text_cap
from api.formats import parse_json, parse_multipart, parse_ndjson, too_many, webhook_fields
from api.streaming import Spools
from docq.blobs import BlobRef
from docq.config import Settings
from docq.errors import (
    Overloaded,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationError,
)
from docq.schemas import DocumentIn, FileDocumentIn, JobCreate, untagged

JSON = "application/json"
NDJSON = "application/x-ndjson"
MULTIPART = "multipart/form-data"


T = TypeVar("T")


def _too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"body larger than {limit} bytes", {"limit": limit})


async def _stream(request: Request, limit: int) -> AsyncIterator[bytes]:
    """The body's chunks, refused with 413 as soon as they pass `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        yield chunk


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it passes `limit` bytes."""
    return b"".join([chunk async for chunk in _stream(request, limit)])


# livesum: with several API processes (PROMETHEUS_MULTIPROC_DIR) the scrape adds up the live ones
UPLOADS_PARSING = Gauge(
    "docq_api_uploads_parsing",
    "Uploads this API process is reading and validating now; at max_parsing_uploads the "
    "next one is refused with 429.",
    multiprocess_mode="livesum",
)


class _Slots:
    """The uploads one API process parses at once; one more is refused (429), not queued,
    so memory stays bounded by `max_parsing_uploads` bodies."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._free = threading.BoundedSemaphore(n)

    def take(self) -> None:
        if not self._free.acquire(blocking=False):
            raise Overloaded(
                f"{self.n} uploads are being parsed, the most this process takes at once; "
                "retry shortly",
                {"limit": "max_parsing_uploads", "max": self.n},
            )
        UPLOADS_PARSING.inc()

    def give(self) -> None:
        UPLOADS_PARSING.dec()
        self._free.release()


def _slots(request: Request, settings: Settings) -> _Slots:
    state = request.app.state
    slots = getattr(state, "upload_slots", None)
    if slots is None or slots.n != settings.max_parsing_uploads:
        slots = state.upload_slots = _Slots(settings.max_parsing_uploads)
    return slots  # type: ignore[no-any-return]


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """Decode and validate in a worker thread (CPU work off the event loop)."""
    return await run_in_threadpool(fn, *args)


def _problems(exc: pydantic.ValidationError, raw: Any) -> list[dict[str, Any]]:
    """pydantic errors as `{document, id, field, message}` entries."""
    out = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = untagged(list(err["loc"]))
        entry: dict[str, Any] = {"loc": loc, "message": err["msg"]}
        if len(loc) >= 2 and loc[0] == "documents" and isinstance(loc[1], int):
            entry["document"] = loc[1]
            try:
                doc_id = raw["documents"][loc[1]].get("id")
            except (KeyError, IndexError, TypeError, AttributeError):
                doc_id = None
            if isinstance(doc_id, str):
                entry["id"] = doc_id
            if len(loc) >= 3:
                entry["field"] = loc[2]
        elif loc:
            entry["field"] = loc[0]
        out.append(entry)
    return out


def validate(raw: Any, settings: Settings) -> JobCreate:
    """Validate a decoded upload against the v1 schema and docq's limits."""
    try:
        job = JobCreate.model_validate(raw)
    except pydantic.ValidationError as exc:
        problems = _problems(exc, raw)
        first = problems[0]
        where = f"document {first['document']}" if "document" in first else "upload"
        field = first.get("field", "body")
        raise ValidationError(
            f"invalid {where}: {field}: {first['message']}", {"errors": problems}
        ) from None
    return check_limits(job, settings)


def resolve_files(job: JobCreate, settings: Settings) -> None:
    """Judge every file document of a schema-valid upload (base64, size, type: api/files.py);
    one that is plain text becomes a text document, a bad one a failed document."""
    text_bytes, chars = text_cap(settings.max_document_chars), settings.max_document_chars
    for i, doc in enumerate(job.documents):
        if isinstance(doc, FileDocumentIn):
            job.documents[i] = resolve(i, doc, settings.max_file_bytes, text_bytes, chars)


def check_limits(job: JobCreate, settings: Settings) -> JobCreate:
    """docq's own limits on a schema-valid upload: size, unique ids, no NUL character, text
    that is more than whitespace; files are checked first (resolve_files)."""
    if len(job.documents) > settings.max_documents_per_job:
        raise too_many(settings.max_documents_per_job, len(job.documents))
    resolve_files(job, settings)
    seen: dict[str, int] = {}
    for i, doc in enumerate(job.documents):
        text = doc.text if isinstance(doc, DocumentIn) else None
        for field, value in (("id", doc.id), ("text", text or "")):
            if "\x00" in value:  # (lone surrogates are refused by the schema itself)
                raise ValidationError(
                    f"invalid document {i}: {field}: contains a NUL character at position "
                    f"{value.index(chr(0))}",
                    {"errors": [{"document": i, "field": field, "message": "contains NUL"}]},
                )
        if text is not None and not text.strip():
            raise ValidationError(
                f"invalid document {i}: text: only whitespace",
                {"errors": [{"document": i, "id": doc.id, "field": "text", "message": "blank"}]},
            )
        if doc.id in seen:
            raise ValidationError(
                f"invalid document {i}: id: duplicate of document {seen[doc.id]}",
                {
                    "errors": [
                        {"document": i, "id": doc.id, "field": "id", "message": "duplicate id"}
                    ]
                },
            )
        seen[doc.id] = i
        if text is not None and len(text) > settings.max_document_chars:
            raise PayloadTooLarge(
                f"document {i} ({doc.id!r}) has {len(text)} characters; the limit is "
                f"{settings.max_document_chars}",
                {"document": i, "id": doc.id, "field": "text"},
            )
    return job


def _decode_json(body: bytes, model: str | None, settings: Settings) -> JobCreate:
    cap = settings.max_documents_per_job
    if body.count(b"{") <= cap + 2:  # cannot hold more documents than the cap
        try:
            # The common case in one pass of pydantic's JSON parser (about twice as fast as
            # json.loads + model_validate on a 3 MB upload); a bad upload is decoded again
            # below only to name the document and field at fault.
            job = JobCreate.model_validate_json(body)
        except pydantic.ValidationError:
            pass
        else:
            if job.model is None and model is not None:
                job.model = model
            return check_limits(job, settings)
    raw = parse_json(body, cap)
    if isinstance(raw, dict) and raw.get("model") is None and model is not None:
        raw["model"] = model
    return validate(raw, settings)


def _decode_ndjson(body: bytes, query: Any, settings: Settings) -> JobCreate:
    raw = parse_ndjson(body, query.get("model"), settings.max_documents_per_job)
    raw["webhook"] = webhook_fields(query)
    return validate(raw, settings)


async def _parse_multipart(request: Request, settings: Settings) -> JobCreate:
    """A multipart upload, its PDFs and images streamed into the blob store; the blobs of
    one refused (or of parts that are no document) are deleted before it answers."""
    blobs = get_resources(request).store.files.blobs
    if blobs is None:
        raise RuntimeError("the API's job store has no blob store (docq.blobs)")
    spools = Spools(blobs, settings.max_upload_bytes)
    stream = _stream(request, settings.max_stored_upload_bytes)
    try:
        raw = await parse_multipart(request.headers, stream, settings, spools)
        job = await _off_loop(validate, raw, settings)
    except BaseException:
        await _off_loop(spools.discard)
        raise
    used = [
        d.data
        for d in job.documents
        if isinstance(d, FileDocumentIn) and isinstance(d.data, BlobRef)
    ]
    await _off_loop(spools.discard, used)
    return job


async def parse_upload(request: Request, settings: Settings) -> JobCreate:
    """Decode and validate an upload whatever its format; raises ValidationError on bad input
    (Overloaded when this process is already parsing as many uploads as it may)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype not in (JSON, NDJSON, "application/jsonl", MULTIPART):
        given = f"content type {ctype!r}" if ctype else "no Content-Type"
        raise UnsupportedMediaType(
            f"unsupported upload: {given}; use {JSON}, {NDJSON} or {MULTIPART}",
            {"content_type": ctype or None, "field": "content-type"},
        )
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise UnsupportedMediaType(
            f"unsupported Content-Encoding {encoding!r}; send the body uncompressed",
            {"content_encoding": encoding, "field": "content-encoding"},
        )
    slots = _slots(request, settings)
    slots.take()
    try:
        if ctype == MULTIPART:
            return await _parse_multipart(request, settings)
        body = await read_body(request, settings.max_upload_bytes)
        if ctype == JSON:
            return await _off_loop(_decode_json, body, request.query_params.get("model"), settings)
        return await _off_loop(_decode_ndjson, body, request.query_params, settings)
    finally:
        slots.give()
