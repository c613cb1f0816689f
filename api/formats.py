"""The three body formats of an upload, decoded into the raw upload dict that
api/uploads.py validates: JSON, NDJSON and multipart. Each stops at the document cap while
it parses, so a body of millions of tiny documents is refused before it is held whole.
A multipart file is judged by api/files.py as it is read (text, or a file to extract), and
streamed into the blob store when it is a PDF or an image (api/streaming.py).
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.datastructures import Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from api.files import as_upload, declared_type, file_document, oversize, text_cap
from api.streaming import BlobSpool, Spools
from docq.config import Settings
from docq.errors import MalformedBody, PayloadTooLarge, ValidationError
from docq.extract.base import TEXT
from docq.schemas import FileDocumentIn


def too_many(limit: int, seen: int | None = None) -> PayloadTooLarge:
    count = f"{seen} documents" if seen is not None else f"more than {limit} documents"
    return PayloadTooLarge(
        f"{count} in one job; the limit is {limit} (split the upload)",
        {"limit": limit, "field": "documents"},
    )


class CapReached(Exception):
    """Raised from inside json.loads to stop parsing at the document cap."""


def parse_json(body: bytes, max_documents: int) -> Any:
    """Decode a JSON body, stopping once it has built more objects than an upload of
    `max_documents` documents can hold (the documents, the upload, its webhook)."""
    built = 0

    def counted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal built
        built += 1
        if built > max_documents + 2:
            raise CapReached
        return dict(pairs)

    try:
        return json.loads(body, object_pairs_hook=counted)
    except CapReached:
        raise too_many(max_documents) from None
    except RecursionError:
        raise MalformedBody("malformed JSON: nested too deeply", {"field": "body"}) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedBody(f"malformed JSON: {exc}", {"field": "body"}) from None


def webhook_fields(fields: Any) -> dict[str, Any] | None:
    """`webhook_url` / `webhook_secret` from query parameters or form fields."""
    url, secret = fields.get("webhook_url"), fields.get("webhook_secret")
    if url is None and secret is None:
        return None
    return {"url": url, "secret": secret}


def parse_ndjson(body: bytes, model: str | None, max_documents: int) -> dict[str, Any]:
    """One document per line (LF or CRLF; blank lines skipped), stopping at the cap."""
    documents: list[Any] = []
    for lineno, line in enumerate(io.BytesIO(body), start=1):
        if not line.strip():
            continue
        if len(documents) == max_documents:
            raise too_many(max_documents)
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


class CappedParser(MultiPartParser):
    """Starlette's multipart parser, dropping the rest of a file as soon as it passes its cap
    (its size is counted as it streams, not after it was spooled): `text_bytes` for a part
    declared as text, `file_bytes` for one declared as another type, the larger of the two
    for one that declares nothing (its bytes tell once it is whole, api/files.py). A file
    over its cap is a failed document (`oversize` holds its cap), not the upload's refusal.
    Each file part is written to a spool of `spools`, not a temporary file (api/streaming.py)."""

    def __init__(
        self, *args: Any, text_bytes: int, file_bytes: int, spools: Spools, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.text_bytes, self.file_bytes = text_bytes, file_bytes
        self.spools = spools
        self._file_bytes = 0
        self._cap = 0
        self.oversize: dict[int, int] = {}  # id() of an UploadFile over its cap -> the cap

    def on_part_begin(self) -> None:
        super().on_part_begin()
        self._file_bytes = 0

    def on_headers_finished(self) -> None:
        super().on_headers_finished()
        file = self._current_part.file
        if file is not None:
            file.file.close()  # the empty temporary file starlette made: a spool instead
            spool = self.spools.new(self._current_files)
            file.file = spool  # type: ignore[assignment]
            self._files_to_close_on_error.append(spool)  # type: ignore[arg-type]
            declared = declared_type(file.content_type)
            self._cap = {None: max(self.text_bytes, self.file_bytes), TEXT: self.text_bytes}.get(
                declared, self.file_bytes
            )

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self._current_part
        if part.file is not None:
            self._file_bytes += end - start
            if self._file_bytes > self._cap:
                self.oversize[id(part.file)] = self._cap
                return  # its bytes so far stay (the Idempotency-Key's fingerprint); no more
        super().on_part_data(data, start, end)


async def _document(item: UploadFile, settings: Settings, cap: int | None) -> Any:
    """One file part as a raw document: `{"id", "text"}` for text (as before files), a
    FileDocumentIn carrying its bytes for a file, or its failure (`cap`: it was over it)."""
    raw = await item.read()  # a part held whole, or the first bytes of one streamed
    doc_id = item.filename or ""
    declared = declared_type(item.content_type)
    assert isinstance(item.file, BlobSpool)
    if item.file.ref is not None and item.file.size > settings.max_file_bytes:
        cap = settings.max_file_bytes  # streamed (a PDF or an image) with a text part's cap
    if cap is not None:
        return as_upload(oversize(doc_id, declared, cap), raw)
    doc = file_document(
        doc_id,
        raw,
        declared,
        max_file_bytes=settings.max_file_bytes,
        text_bytes=text_cap(settings.max_document_chars),
        max_chars=settings.max_document_chars,
    )
    if doc.error_code is None and doc.content is None:
        return {"id": item.filename, "text": doc.text}  # validated as text uploads always were
    upload = as_upload(doc, raw)
    if doc.error_code is None and isinstance(upload, FileDocumentIn) and item.file.ref is not None:
        upload._data = item.file.ref  # streamed into the blob store (api/streaming.py)
    return upload


async def parse_multipart(
    headers: Headers, stream: AsyncIterator[bytes], settings: Settings, spools: Spools
) -> dict[str, Any]:
    """Files in `files` (id = file name: text files, PDFs, scans, DOCX, HTML), `model` and
    the webhook form fields; files are counted and capped as they stream, PDFs and images
    into the blob store (`spools`)."""
    cap = settings.max_documents_per_job
    text_bytes = text_cap(settings.max_document_chars)
    parser = CappedParser(
        headers,
        stream,
        max_files=cap,
        max_fields=16,
        text_bytes=text_bytes,
        file_bytes=settings.max_file_bytes,
        spools=spools,
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
            documents.append(await _document(item, settings, parser.oversize.get(id(item))))
        webhook = webhook_fields(form)
    finally:
        await form.close()
    return {
        "model": model if isinstance(model, str) else None,
        "documents": documents,
        "webhook": webhook,
    }
