"""The three body formats of an upload, decoded into the raw upload dict that
api/uploads.py validates: JSON, NDJSON and multipart. Each stops at the document cap while
it parses, so a body of millions of tiny documents is refused before it is held whole.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.datastructures import Headers, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser

from docq.config import Settings
from docq.errors import MalformedBody, PayloadTooLarge, ValidationError


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


async def parse_multipart(
    headers: Headers, stream: AsyncIterator[bytes], settings: Settings
) -> dict[str, Any]:
    """Text files in `files` (id = file name), `model` and the webhook form fields; files
    are counted and capped as they stream."""
    cap = settings.max_documents_per_job
    parser = CappedParser(
        headers,
        stream,
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
        webhook = webhook_fields(form)
    finally:
        await form.close()
    return {
        "model": model if isinstance(model, str) else None,
        "documents": documents,
        "webhook": webhook,
    }
