"""Settings: extraction of text from uploaded files (docq.extract), per document.

Each limit trades the same two things: a higher one reads larger honest documents, a lower
one bounds what a hostile file may cost a worker (time, memory) before it is refused as
that document's error.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Extraction(BaseModel):
    """Settings: extraction limits and OCR."""

    extract_max_pages: int = Field(
        500,
        ge=1,
        description="Most pages (PDF pages, TIFF frames) one document may have; counted "
        "before any page is read. Higher reads longer reports; each OCR'd page costs seconds.",
    )
    extract_max_pixels: int = Field(
        60_000_000,
        ge=1,
        description="Most pixels of one image or rendered page, read from its header before "
        "decoding (an A4 page at 300 dpi is 8.7 M). Higher accepts larger scans; each pixel "
        "costs 1-4 bytes of worker memory while it is decoded.",
    )
    extract_max_decompressed_bytes: int = Field(
        200_000_000,
        ge=1,
        description="Most bytes a DOCX's zip, or a PDF's streams other than images (each "
        "image is held to the pixels it declares), may unpack to, checked before the parser "
        "opens them; also the largest text or HTML document. Lower refuses bombs sooner and "
        "some honest long documents.",
    )
    extract_max_ratio: float = Field(
        200.0,
        gt=1,
        description="Largest compression ratio of one zip member of a DOCX (XML rarely "
        "compresses past 20x; bombs reach 1000x). Lower refuses more bombs and some honest "
        "repetitive documents.",
    )
    extract_timeout_s: float = Field(
        60.0,
        gt=0,
        description="Wall-clock limit on reading one document: checked between pages, and "
        "enforced in the isolated child by a kernel timer that ends it (a parser stuck in C). "
        "Lower frees a worker sooner from a hostile file; a long scan needs seconds per OCR'd "
        "page.",
    )
    extract_max_chars: int = Field(
        2_000_000,
        ge=1,
        description="Most characters kept from one document (the rest is cut, not an error). "
        "The classifier reads windows of the whole text: more characters, more windows.",
    )
    extract_memory_mib: int = Field(
        1024,
        ge=64,
        description="Address-space cap (RLIMIT_AS) of each isolated extraction child, in MiB. "
        "A parser that grows past it fails that document as too_large instead of the worker "
        "being killed by the kernel; too low fails honest large scans.",
    )
    extract_processes: int = Field(
        2,
        ge=1,
        description="Warm child processes one extract worker keeps for extract_isolated (and "
        "so documents read at once). Each holds its own parsers and Tesseract (~100 MB).",
    )
    extract_ocr_language: str = Field(
        "eng",
        description="Tesseract language(s), e.g. 'eng+deu'; each must be installed "
        "(Debian tesseract-ocr-<lang>). More languages read more scripts, slower.",
    )
    extract_ocr_dpi: int = Field(
        300,
        ge=72,
        le=600,
        description="Resolution at which a PDF page without a text layer is rendered for OCR. "
        "300 is Tesseract's sweet spot; lower is faster and misreads small print.",
    )
    extract_min_page_chars: int = Field(
        16,
        ge=0,
        description="A PDF page whose text layer has fewer characters than this is OCR'd "
        "(a scan with a stray header). Higher OCRs more pages (slower, safer).",
    )
    extract_tessdata_dir: str = Field(
        "",
        description="Folder of Tesseract's *.traineddata. Empty: the first of Debian's "
        "places that exists (tesseract-ocr-eng puts them in /usr/share/tesseract-ocr/5/"
        "tessdata). Where none exists OCR is unavailable: scans fail as ocr_unavailable.",
    )
    extract_ocr_threads: int = Field(
        2,
        ge=1,
        description="Threads that OCR the scanned pages of one PDF at once (Tesseract "
        "releases the GIL). More finish one long scan sooner; documents are already read in "
        "parallel by extract_processes, so more than cores / processes only contend.",
    )
