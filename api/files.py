"""Uploaded files: their type judged from their bytes (docq.extract.sniff), their sizes.

The API never parses a file: it sniffs the first bytes, checks the declared type against
them and the size against its cap, and stores the bytes for an extract worker
(workers/extraction.py). A file that is plain text becomes a text document right here,
exactly as a text upload (nothing to extract).

What a declared type may say (a multipart part's Content-Type, a JSON document's
`content_type`):
- nothing, or `application/octet-stream` (what clients send when they do not know): the
  sniffed type is taken;
- the sniffed type (aliases allowed: image/jpg, application/zip for a DOCX...);
- for text, any `text/*`: declared text/plain keeps a file that looks like HTML the text it
  says it is (as every text upload before files), declared text/html reads plain text as
  HTML (the same text);
- anything else makes the document a failed one, never the upload's refusal: a type docq
  does not read (`unsupported_type`), bytes that are not the declared type
  (`type_mismatch`), an empty file (`empty`), text that is not UTF-8 (`not_utf8`) or only
  whitespace (`no_text`), a file over its cap (`too_large`). The document is stored failed,
  without its bytes, and the worker answers it as it answers a file it fails to read
  (encrypted, truncated, a bomb, over a page or pixel limit: docq.extract), with the same
  codes (docq.errors.DOCUMENT_CODES). With `?on_invalid=reject` the upload is refused
  instead, listing every failed document (api/submissions.py).

A declared DOCX whose bytes are no type is read by the worker all the same: it tells a
truncated or encrypted DOCX from one that is not a DOCX at all (docq/extract/docx.py).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from docq.errors import DOCUMENT_CODES, ValidationError
from docq.extract import CONTENT_TYPES, sniff
from docq.extract.base import DOCX, HTML, JPEG, TEXT, TIFF
from docq.schemas import DocumentIn, FileDocumentIn
from docq.store import Document

UNKNOWN = "application/octet-stream"  # the stored type of a failed file of no known type
UNDECLARED = frozenset({"", "application/octet-stream", "binary/octet-stream"})
ALIASES = {
    "image/jpg": JPEG,
    "image/pjpeg": JPEG,
    "image/tif": TIFF,
    "application/zip": DOCX,
    "application/xhtml+xml": HTML,
}
READ = ", ".join(sorted(CONTENT_TYPES))


def declared_type(raw: str | None) -> str | None:
    """A declared content type, lower-case without parameters; None when it says nothing."""
    name = (raw or "").split(";")[0].strip().lower()
    if name in UNDECLARED:
        return None
    name = ALIASES.get(name, name)
    return TEXT if name.startswith("text/") and name != HTML else name


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _where(i: int, doc_id: str) -> str:
    return f"document {i} ({doc_id!r})"


def text_cap(max_document_chars: int) -> int:
    """The byte cap of a text file: a character is at most 4 bytes of UTF-8."""
    return 4 * max_document_chars


def failed(doc_id: str, content_type: str | None, code: str, message: str) -> Document:
    """A document accepted as failed: stored without its bytes, answered with `code`."""
    if code not in DOCUMENT_CODES:
        raise ValueError(f"unknown document failure code {code!r}")
    return Document(doc_id, "", content_type or UNKNOWN, error=message, error_code=code)


def oversize(doc_id: str, declared: str | None, limit: int) -> Document:
    """The failed document of a file over its cap of `limit` bytes."""
    return failed(doc_id, declared, "too_large", f"the file is larger than {limit:,} bytes")


def _text(
    doc_id: str, data: bytes, declared: str | None, text_bytes: int, max_chars: int
) -> Document:
    """A file read as plain text: its text document, or why it is none."""
    if b"\x00" in data:
        return failed(doc_id, declared, "not_utf8", "the text holds NUL bytes: not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return failed(
            doc_id, declared, "not_utf8", f"the text is not UTF-8 (byte {exc.start}: {exc.reason})"
        )
    if len(data) > text_bytes or len(text) > max_chars:
        return failed(doc_id, TEXT, "too_large", f"the text has more than {max_chars:,} characters")
    if not text.strip():
        return failed(doc_id, TEXT, "no_text", "the text is only whitespace")
    return Document(doc_id, text)


def file_document(
    doc_id: str,
    data: bytes,
    declared: str | None,
    *,
    max_file_bytes: int,
    text_bytes: int,
    max_chars: int,
) -> Document:
    """The document a file makes: a text document when the file is plain text, a file of its
    sniffed type to extract, or a failed document saying why it is neither."""
    if not data:
        return failed(doc_id, declared, "empty", "the file is empty (0 bytes)")
    if declared is not None and declared not in CONTENT_TYPES:
        return failed(
            doc_id, declared, "unsupported_type", f"{declared!r} is not a type docq reads ({READ})"
        )
    sniffed = sniff(data)
    kind = sniffed
    if sniffed is None:
        if declared == TEXT or (declared is None and _utf8(data) and b"\x00" not in data):
            return _text(doc_id, data, declared, text_bytes, max_chars)
        if declared == HTML:
            return failed(doc_id, declared, "not_utf8", "declared text/html, but not UTF-8 text")
        if declared == DOCX:  # cut or encrypted, or no DOCX at all: the worker tells which
            kind = DOCX
        elif declared is None:
            return failed(
                doc_id,
                None,
                "unsupported_type",
                f"its bytes are none of the types docq reads ({READ})",
            )
        else:
            return failed(
                doc_id,
                declared,
                "type_mismatch",
                f"declared {declared}, but its bytes are none of the types docq reads",
            )
    elif declared is not None and declared != sniffed:
        if {declared, sniffed} != {TEXT, HTML}:
            return failed(
                doc_id,
                declared,
                "type_mismatch",
                f"declared {declared}, but its bytes are {sniffed}",
            )
        kind = declared  # text or HTML: the client knows which it meant
    if kind == TEXT:
        return _text(doc_id, data, declared, text_bytes, max_chars)
    if len(data) > max_file_bytes:
        return oversize(doc_id, kind, max_file_bytes)
    return Document(doc_id, "", content_type=kind, content=data)


def as_upload(doc: Document, data: bytes | None = None) -> Any:
    """A judged file as the upload holds it: a DocumentIn (plain text), or a FileDocumentIn
    carrying its bytes (to extract) or its failure (`data`: what identifies it to the
    Idempotency-Key's fingerprint)."""
    if doc.error_code is not None:
        assert doc.error is not None and doc.content_type is not None
        failure = FileDocumentIn.model_construct(
            id=doc.id, content="", content_type=doc.content_type
        )
        failure._failure = (doc.error_code, doc.error)
        failure._data = data
        return failure
    if doc.content is None:
        return DocumentIn(id=doc.id, text=doc.text)
    assert doc.content_type is not None
    checked = FileDocumentIn.model_construct(id=doc.id, content="", content_type=doc.content_type)
    checked._data = doc.content
    return checked


def decode_content(i: int, doc_id: str, content: str) -> bytes:
    """A JSON document's base64 `content` as bytes, refused (422) unless strict base64: a
    JSON field that is not what the schema says is the request's fault, not the file's."""
    try:
        return base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(
            f"invalid {_where(i, doc_id)}: content: not base64",
            {"errors": [{"document": i, "id": doc_id, "field": "content", "message": "base64"}]},
        ) from None


def resolve(
    i: int, doc: FileDocumentIn, max_file_bytes: int, text_bytes: int, max_chars: int
) -> Any:
    """A JSON/NDJSON file document once judged (file_document, then as_upload); a multipart
    one already is. A file over its cap is judged from its base64 length, not decoded."""
    if doc.data is not None or doc.failure is not None:
        return doc
    declared = declared_type(doc.content_type)
    if len(doc.content) // 4 * 3 > max_file_bytes + 2:
        return as_upload(oversize(doc.id, declared, max_file_bytes), doc.content[:4096].encode())
    data = decode_content(i, doc.id, doc.content)
    got = file_document(
        doc.id,
        data,
        declared,
        max_file_bytes=max_file_bytes,
        text_bytes=text_bytes,
        max_chars=max_chars,
    )
    return as_upload(got, data)
