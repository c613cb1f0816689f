"""Where the client's documents come from, and how an upload is cut into jobs the server takes.

Every source yields `{"id", "text"}` dicts lazily, so a client can stream a million
documents from disk without holding them. `bodies()` turns any such iterable into NDJSON
bodies that each stay within the server's limits (documents per job, bytes per request):
one body, one job.
"""

from __future__ import annotations

import base64
import io
import json
import mimetypes
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

Document = Mapping[str, str]

# Files read as NDJSON (one document per line); any other file is one document.
NDJSON_SUFFIXES = (".ndjson", ".jsonl")
# Files sent as files (base64 `content`, read by the server's extract workers), whatever
# their bytes; any other file is sent as text when it is UTF-8, else as a file too (the
# server judges it: a bad one is a failed document, or the upload's refusal on request).
FILE_SUFFIXES = (".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".docx", ".html", ".htm")


# The server's defaults of DOCQ_MAX_DOCUMENTS_PER_JOB and DOCQ_MAX_UPLOAD_BYTES (the client
# installs without the server's settings; tests/client/test_models.py holds them equal).
MAX_DOCUMENTS_PER_JOB = 100_000
MAX_UPLOAD_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """How much one job may hold. Defaults are the server's defaults (DOCQ_MAX_DOCUMENTS_PER_JOB,
    DOCQ_MAX_UPLOAD_BYTES); give the values of a server configured otherwise."""

    max_documents: int = MAX_DOCUMENTS_PER_JOB
    max_bytes: int = MAX_UPLOAD_BYTES


def from_texts(texts: Iterable[str], prefix: str = "") -> Iterator[dict[str, str]]:
    """Documents from plain texts; ids are `prefix` + the text's position (0, 1, ...)."""
    for i, text in enumerate(texts):
        yield {"id": f"{prefix}{i}", "text": text}


def from_ndjson(source: Path | IO[str] | IO[bytes]) -> Iterator[dict[str, str]]:
    """Documents from NDJSON, one `{"id", "text"}` object per line (blank lines skipped)."""
    if isinstance(source, Path):
        with source.open(encoding="utf-8") as f:
            yield from from_ndjson(f)
        return
    name = getattr(source, "name", "NDJSON")
    for number, raw in enumerate(source, start=1):
        line: str = raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}, line {number}: not JSON ({exc.msg})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{name}, line {number}: expected an object with id and text")
        yield doc


def from_paths(paths: Iterable[Path]) -> Iterator[dict[str, str]]:
    """Documents from files: `.ndjson`/`.jsonl` files line by line, any other file whole,
    its id the file name: a text document when it is UTF-8 text, else a file (from_file)."""
    for path in paths:
        if path.suffix in NDJSON_SUFFIXES:
            yield from from_ndjson(path)
            continue
        data = path.read_bytes()
        if path.suffix.lower() not in FILE_SUFFIXES:
            try:
                yield {"id": path.name, "text": data.decode("utf-8")}
                continue
            except UnicodeDecodeError:
                pass
        yield from_file(path.name, data)


def from_file(doc_id: str, data: bytes, content_type: str | None = None) -> dict[str, str]:
    """A file document: its bytes in base64 and its type (guessed from the name when not
    given; the server judges the bytes, and says when they are not that type)."""
    guessed = content_type or mimetypes.guess_type(doc_id)[0] or "application/octet-stream"
    return {"id": doc_id, "content": base64.b64encode(data).decode(), "content_type": guessed}


def ndjson_line(doc: Document) -> bytes:
    return json.dumps(dict(doc), ensure_ascii=False).encode() + b"\n"


def bodies(documents: Iterable[Document], limits: Limits) -> Iterator[tuple[bytes, int]]:
    """NDJSON bodies within `limits`, in upload order, with their document counts.

    Only one body is held at a time. A single document larger than `max_bytes` still goes
    alone, so that the server's own 413 names it.
    """
    buffer, count = io.BytesIO(), 0
    for doc in documents:
        line = ndjson_line(doc)
        full = count >= limits.max_documents or buffer.tell() + len(line) > limits.max_bytes
        if count and full:
            yield buffer.getvalue(), count
            buffer, count = io.BytesIO(), 0
        buffer.write(line)
        count += 1
    if count:
        yield buffer.getvalue(), count
