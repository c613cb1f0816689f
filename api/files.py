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
- anything else is refused: a type docq does not read is 415, a type the bytes are not
  (a PNG sent as a PDF) is 422. Both name the document.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from docq.blobs import BlobRef
from docq.errors import ContentTypeMismatch, PayloadTooLarge, UnsupportedMediaType, ValidationError
from docq.extract import CONTENT_TYPES, sniff
from docq.extract.base import DOCX, HTML, JPEG, TEXT, TIFF
from docq.schemas import DocumentIn, FileDocumentIn
from docq.store import Document

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


def too_large(doc_id: str, limit: int) -> PayloadTooLarge:
    """The 413 of one file over its cap (worded as text files have always been refused)."""
    return PayloadTooLarge(
        f"file {doc_id!r} is larger than {limit} bytes",
        {"limit": limit, "field": "files", "id": doc_id},
    )


def file_document(
    i: int, doc_id: str, data: bytes, declared: str | None, *, max_file_bytes: int, text_bytes: int
) -> Document | None:
    """The document a file makes: a text document when the file is plain text, else a file
    of its sniffed type. None: the bytes are no type docq reads but the client said text
    (or said nothing and they decode as UTF-8: text with a NUL, say), so the caller refuses
    them as a text document, exactly as before files."""
    sniffed = sniff(data)
    if declared is not None and declared not in CONTENT_TYPES:
        raise UnsupportedMediaType(
            f"{_where(i, doc_id)}: content type {declared!r} is not one docq reads ({READ})",
            {"document": i, "id": doc_id, "field": "content_type", "declared": declared},
        )
    if sniffed is None:
        if declared == TEXT or (declared is None and _utf8(data)):
            return None
        raise UnsupportedMediaType(
            f"{_where(i, doc_id)}: its bytes are no type docq reads ({READ})",
            {"document": i, "id": doc_id, "field": "content", "declared": declared},
        )
    kind = sniffed
    if declared is not None and declared != sniffed:
        if {declared, sniffed} != {TEXT, HTML}:
            raise ContentTypeMismatch(
                f"{_where(i, doc_id)}: declared {declared!r} but its bytes are {sniffed!r}",
                {"document": i, "id": doc_id, "declared": declared, "sniffed": sniffed},
            )
        kind = declared  # text or HTML: the client knows which it meant
    if kind == TEXT:
        if len(data) > text_bytes:
            raise too_large(doc_id, text_bytes)
        return Document(doc_id, data.decode("utf-8"))
    if len(data) > max_file_bytes:
        raise too_large(doc_id, max_file_bytes)
    return Document(doc_id, "", content_type=kind, content=data)


def decode_content(i: int, doc_id: str, content: str, max_file_bytes: int) -> bytes:
    """A JSON document's base64 `content` as bytes, refused (422) unless strict base64, and
    (413) when the file is over its cap, judged before decoding."""
    if len(content) // 4 * 3 > max_file_bytes + 2:
        raise too_large(doc_id, max_file_bytes)
    try:
        data = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError(
            f"invalid {_where(i, doc_id)}: content: not base64",
            {"errors": [{"document": i, "id": doc_id, "field": "content", "message": "base64"}]},
        ) from None
    if not data:
        raise ValidationError(
            f"invalid {_where(i, doc_id)}: content: an empty file",
            {"errors": [{"document": i, "id": doc_id, "field": "content", "message": "empty"}]},
        )
    return data


def carrying(doc: FileDocumentIn, data: bytes | BlobRef) -> FileDocumentIn:
    """`doc` holding its checked bytes, or the blob they streamed into (what the job store
    will keep)."""
    doc._data = data
    return doc


def resolve(i: int, doc: FileDocumentIn, max_file_bytes: int, text_bytes: int) -> Any:
    """A JSON/NDJSON file document once checked: a DocumentIn when it is plain text, else
    the FileDocumentIn with its sniffed type and its bytes (a multipart one already is)."""
    if doc.data is not None:
        return doc
    data = decode_content(i, doc.id, doc.content, max_file_bytes)
    got = file_document(
        i,
        doc.id,
        data,
        declared_type(doc.content_type),
        max_file_bytes=max_file_bytes,
        text_bytes=text_bytes,
    )
    if got is None:
        raise ValidationError(
            f"invalid {_where(i, doc.id)}: content: declared as text but not UTF-8 text "
            "without NUL characters",
            {"errors": [{"document": i, "id": doc.id, "field": "content", "message": "text"}]},
        )
    if got.content is None:
        return DocumentIn(id=doc.id, text=got.text)
    assert got.content_type is not None
    checked = FileDocumentIn.model_construct(id=doc.id, content="", content_type=got.content_type)
    return carrying(checked, data)
