"""Read an upload in any of the three body formats into one validated `JobCreate`.

- `application/json`: `{"model": ..., "documents": [{"id", "text"}, ...]}`
- `application/x-ndjson`: one `{"id", "text"}` per line, model in `?model=`
- `multipart/form-data`: text files in `files` (id = file name), model in the `model` field

The webhook is `"webhook": {"url", "secret"}` in JSON, and `webhook_url` / `webhook_secret`
query parameters (NDJSON) or form fields (multipart) otherwise.

Errors name the document (position and id) and the field, so a client can fix its upload.

Every limit is enforced while the body streams in, before it is held: the byte count on
the stream (whatever Content-Length says), each multipart file's size, the number of
files, and the number of documents (parsing stops at the cap). Decoding and validating run
in a worker thread, at most `max_parsing_uploads` at once per process (one more gets 429),
so a large upload never stalls the event loop (`/healthz` keeps answering).
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pydantic
from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from docq.config import Settings
from docq.errors import (
    MalformedBody,
    Overloaded,
    PayloadTooLarge,
    UnsupportedMediaType,
    ValidationError,
)
from docq.schemas import JobCreate

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

    def give(self) -> None:
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
        loc = list(err["loc"])
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


def check_limits(job: JobCreate, settings: Settings) -> JobCreate:
    """docq's own limits on a schema-valid upload: size, unique ids, no NUL character, text
    that is more than whitespace."""
    if len(job.documents) > settings.max_documents_per_job:
        raise _too_many(settings.max_documents_per_job, len(job.documents))
    seen: dict[str, int] = {}
    for i, doc in enumerate(job.documents):
        for field, value in (("id", doc.id), ("text", doc.text)):
            if "\x00" in value:  # (lone surrogates are refused by the schema itself)
                raise ValidationError(
                    f"invalid document {i}: {field}: contains a NUL character at position "
                    f"{value.index(chr(0))}",
                    {"errors": [{"document": i, "field": field, "message": "contains NUL"}]},
                )
        if not doc.text.strip():
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
        if len(doc.text) > settings.max_document_chars:
            raise PayloadTooLarge(
                f"document {i} ({doc.id!r}) has {len(doc.text)} characters; the limit is "
                f"{settings.max_document_chars}",
                {"document": i, "id": doc.id, "field": "text"},
            )
    return job


def _too_many(limit: int, seen: int | None = None) -> PayloadTooLarge:
    count = f"{seen} documents" if seen is not None else f"more than {limit} documents"
    return PayloadTooLarge(
        f"{count} in one job; the limit is {limit} (split the upload)",
        {"limit": limit, "field": "documents"},
    )


class _CapReached(Exception):
    """Raised from inside json.loads to stop parsing at the document cap."""


def _parse_json(body: bytes, max_documents: int) -> Any:
    """Decode a JSON body, stopping once it has built more objects than an upload of
    `max_documents` documents can hold (the documents, the upload, its webhook)."""
    built = 0

    def counted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal built
        built += 1
        if built > max_documents + 2:
            raise _CapReached
        return dict(pairs)

    try:
        return json.loads(body, object_pairs_hook=counted)
    except _CapReached:
        raise _too_many(max_documents) from None
    except RecursionError:
        raise MalformedBody("malformed JSON: nested too deeply", {"field": "body"}) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedBody(f"malformed JSON: {exc}", {"field": "body"}) from None


def _webhook_fields(fields: Any) -> dict[str, Any] | None:
    """`webhook_url` / `webhook_secret` from query parameters or form fields."""
    url, secret = fields.get("webhook_url"), fields.get("webhook_secret")
    if url is None and secret is None:
        return None
    return {"url": url, "secret": secret}


def _parse_ndjson(body: bytes, model: str | None, max_documents: int) -> dict[str, Any]:
    """One document per line (LF or CRLF; blank lines skipped), stopping at the cap."""
    documents: list[Any] = []
    for lineno, line in enumerate(io.BytesIO(body), start=1):
        if not line.strip():
            continue
        if len(documents) == max_documents:
            raise _too_many(max_documents)
        try:
            documents.append(json.loads(line))
        except RecursionError:
            raise MalformedBody(
                f"malformed JSON on line {lineno}: nested too deeply",
                {"line": lineno, "field": "body"},
            ) from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise MalformedBody(
                f"malformed JSON on line {lineno}: {exc}", {"line": lineno, "field": "body"}
            ) from None
    return {"model": model, "documents": documents}


class _CappedParser(MultiPartParser):
    """Starlette's multipart parser, refusing a file as soon as it passes `max_file_bytes`
    (its size is counted as it streams, not after it was spooled)."""

    def __init__(self, *args: Any, max_file_bytes: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_file_bytes = max_file_bytes
        self._file_bytes = 0

    def on_part_begin(self) -> None:
        super().on_part_begin()
        self._file_bytes = 0

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._current_part
        if part.file is not None:
            self._file_bytes += end - start
            if self._file_bytes > self.max_file_bytes:
                raise PayloadTooLarge(
                    f"file {part.file.filename!r} is larger than {self.max_file_bytes} bytes",
                    {"limit": self.max_file_bytes, "field": "files", "id": part.file.filename},
                )
        super().on_part_data(data, start, end)


async def _parse_multipart(request: Request, settings: Settings) -> dict[str, Any]:
    cap = settings.max_documents_per_job
    parser = _CappedParser(
        request.headers,
        _stream(request, settings.max_upload_bytes),
        max_files=cap,
        max_fields=16,
        # a document of max_document_chars characters is at most 4 bytes a character
        max_file_bytes=4 * settings.max_document_chars,
    )
    try:
        form = await parser.parse()
    except MultiPartException as exc:
        if exc.message.startswith("Too many files"):
            raise PayloadTooLarge(
                f"more than {cap} files in one upload; the limit is {cap} (split the upload)",
                {"limit": cap, "field": "files"},
            ) from None
        raise MalformedBody(f"malformed multipart body: {exc.message}", {"field": "body"}) from None
    try:
        model = form.get("model")
        documents = []
        for i, item in enumerate(form.getlist("files")):
            if not isinstance(item, UploadFile):
                raise ValidationError(
                    f"invalid document {i}: files: expected a file, got a plain field",
                    {"errors": [{"document": i, "field": "files"}]},
                )
            raw = await item.read()
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValidationError(
                    f"invalid document {i}: text: {item.filename!r} is not UTF-8 text",
                    {"errors": [{"document": i, "id": item.filename, "field": "text"}]},
                ) from None
            documents.append({"id": item.filename, "text": text})
        webhook = _webhook_fields(form)
    finally:
        await form.close()
    return {
        "model": model if isinstance(model, str) else None,
        "documents": documents,
        "webhook": webhook,
    }


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
    raw = _parse_json(body, cap)
    if isinstance(raw, dict) and raw.get("model") is None and model is not None:
        raw["model"] = model
    return validate(raw, settings)


def _decode_ndjson(body: bytes, query: Any, settings: Settings) -> JobCreate:
    raw = _parse_ndjson(body, query.get("model"), settings.max_documents_per_job)
    raw["webhook"] = _webhook_fields(query)
    return validate(raw, settings)


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
            raw = await _parse_multipart(request, settings)
            return await _off_loop(validate, raw, settings)
        body = await read_body(request, settings.max_upload_bytes)
        if ctype == JSON:
            return await _off_loop(_decode_json, body, request.query_params.get("model"), settings)
        return await _off_loop(_decode_ndjson, body, request.query_params, settings)
    finally:
        slots.give()
