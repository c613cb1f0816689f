"""What extraction takes and gives: the content types, the per-document limits, the result.

Every extractor (pdf, ocr, docx, html, text) takes bytes and a `Limits` and returns an
`Extracted`, or raises `ExtractionFailed` with a code; nothing else may escape
(docq.extract.dispatch turns a parser's own exceptions into "unreadable").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from docq.errors import ExtractionFailed

if TYPE_CHECKING:
    from docq.config import Settings

PDF = "application/pdf"
PNG = "image/png"
JPEG = "image/jpeg"
TIFF = "image/tiff"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
HTML = "text/html"
TEXT = "text/plain"
IMAGES = frozenset({PNG, JPEG, TIFF})
CONTENT_TYPES: frozenset[str] = frozenset({PDF, PNG, JPEG, TIFF, DOCX, HTML, TEXT})

Method = Literal["text", "ocr", "mixed"]


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-document limits (DOCQ_EXTRACT_*; docq/config/extract.py says what each trades)."""

    max_pages: int = 500
    max_pixels: int = 60_000_000
    max_decompressed_bytes: int = 200_000_000
    timeout_s: float = 60.0
    max_chars: int = 2_000_000
    max_ratio: float = 200.0
    memory_mib: int = 1024
    ocr_language: str = "eng"
    ocr_dpi: int = 300
    min_page_chars: int = 16
    ocr_threads: int = 2
    tessdata_dir: str = ""  # empty: Debian's places (docq.extract.ocr.TESSDATA_PLACES)

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            max_pages=settings.extract_max_pages,
            max_pixels=settings.extract_max_pixels,
            max_decompressed_bytes=settings.extract_max_decompressed_bytes,
            timeout_s=settings.extract_timeout_s,
            max_chars=settings.extract_max_chars,
            max_ratio=settings.extract_max_ratio,
            memory_mib=settings.extract_memory_mib,
            ocr_language=settings.extract_ocr_language,
            ocr_dpi=settings.extract_ocr_dpi,
            min_page_chars=settings.extract_min_page_chars,
            ocr_threads=settings.extract_ocr_threads,
            tessdata_dir=settings.extract_tessdata_dir,
        )


@dataclass(frozen=True, slots=True)
class Extracted:
    """A document's text, how many pages it had and how it was read."""

    text: str
    pages: int
    extraction: Method
    chars: int  # characters read (before max_chars cut the text: len(text) <= chars)


def finish(text: str, pages: int, extraction: Method, limits: Limits) -> Extracted:
    """The result of one extractor: whitespace-trimmed, cut to max_chars, or no_text."""
    text = text.strip()
    if not text:
        raise ExtractionFailed("no_text", f"no text in the document ({pages} page(s) read)")
    return Extracted(text[: limits.max_chars], pages, extraction, len(text))


def method(ocr_pages: int, pages: int) -> Method:
    """ "text" when no page needed OCR, "ocr" when all did, "mixed" between."""
    if ocr_pages == 0:
        return "text"
    return "ocr" if ocr_pages >= pages else "mixed"
