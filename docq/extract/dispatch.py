"""`extract`: a file's bytes and declared content type to its text, or ExtractionFailed.

The one place that turns whatever a parser raises into a document's error: the parsers are
C libraries under Python bindings that raise their own exceptions (or MemoryError, or
RecursionError) on hostile input, and nothing but ExtractionFailed may reach the worker.
"""

from __future__ import annotations

import time

from docq.errors import ExtractionFailed
from docq.extract.base import CONTENT_TYPES, DOCX, HTML, IMAGES, PDF, TEXT, Extracted, Limits
from docq.extract.sniff import sniff


def extract(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """The text of one document, in this process (extract_isolated runs it in a child)."""
    deadline = time.monotonic() + limits.timeout_s
    content_type = content_type.split(";")[0].strip().lower()
    if content_type not in CONTENT_TYPES:
        raise ExtractionFailed("unsupported_type", f"docq does not extract {content_type!r}")
    try:
        return _extract(data, content_type, limits, deadline)
    except ExtractionFailed:
        raise
    except MemoryError:
        raise ExtractionFailed("too_large", "reading the document ran out of memory") from None
    except RecursionError:
        raise ExtractionFailed("unreadable", "the document nests too deeply to read") from None
    except Exception as exc:  # a parser's own error on a malformed file: that file's error
        raise ExtractionFailed(
            "unreadable", f"the {content_type} file cannot be read: {type(exc).__name__}: {exc}"
        ) from None


def _extract(data: bytes, content_type: str, limits: Limits, deadline: float) -> Extracted:
    found = sniff(data)
    if content_type in (TEXT, HTML):
        from docq.extract.text import extract_html, extract_text

        if found is None:  # binary, or not UTF-8: text that is not text
            raise ExtractionFailed("not_utf8", _mismatch(content_type, found))
        if found not in (TEXT, HTML):  # a PDF or an image sent as text
            raise ExtractionFailed("type_mismatch", _mismatch(content_type, found))
        return extract_text(data, limits) if content_type == TEXT else extract_html(data, limits)
    if found != content_type and not (content_type == DOCX and found is None):
        raise ExtractionFailed("type_mismatch", _mismatch(content_type, found))
    if content_type == PDF:
        from docq.extract.pdf import extract_pdf

        return extract_pdf(data, limits, deadline)
    if content_type == DOCX:  # sniff None: an OLE file or a broken zip, docx.py says which
        from docq.extract.docx import extract_docx

        return extract_docx(data, limits)
    if content_type in IMAGES:
        from docq.extract.images import extract_image

        return extract_image(data, content_type, limits, deadline)
    raise ExtractionFailed("unsupported_type", f"docq does not extract {content_type!r}")


def _mismatch(declared: str, found: str | None) -> str:
    return f"declared {declared}, but the bytes are {found or 'none of the types docq reads'}"
