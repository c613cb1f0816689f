"""The content type of an upload judged from its bytes, never from its name or its header.

The API calls `sniff` on every uploaded file and refuses what it returns None for (415), and
compares it with a declared type: a file that lies about its type is caught at upload.
"""

from __future__ import annotations

import io
import zipfile

from docq.extract.base import DOCX, HTML, JPEG, PDF, PNG, TEXT, TIFF

# The main part of a Word document, as [Content_Types].xml names it (.docx; .docm is the
# macro-enabled one, read the same way: macros are never run).
WORD_MAIN = (
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "application/vnd.ms-word.document.macroEnabled.main+xml",
)
# How far into the bytes a PDF header may sit (readers accept junk before %PDF-, up to 1 KiB)
PDF_WINDOW = 1024
HTML_MARKS = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<body",
    b"<meta",
    b"<title",
    b"<div",
    b"<p>",
    b"<table",
)
MAX_CONTENT_TYPES_XML = 1 << 20  # a real one is a few KiB: a bigger one is not trusted


def sniff(data: bytes) -> str | None:
    """The content type (one of CONTENT_TYPES) the bytes are, or None if none of them."""
    if PDF_MAGIC in data[:PDF_WINDOW]:
        return PDF
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return PNG
    if data.startswith(b"\xff\xd8\xff"):
        return JPEG
    if data.startswith((b"II*\x00", b"MM\x00*")):
        return TIFF
    if data.startswith(b"PK\x03\x04"):
        return DOCX if is_docx(data) else None
    text = _as_text(data)
    if text is None:
        return None
    head = text[:2048].lstrip("\ufeff \t\r\n").lower().encode()
    if head.startswith(b"<") and any(mark in head for mark in HTML_MARKS):
        return HTML
    return TEXT


PDF_MAGIC = b"%PDF-"


def is_docx(data: bytes) -> bool:
    """A zip whose [Content_Types].xml declares a Word main document part."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            info = archive.getinfo("[Content_Types].xml")
            if info.file_size > MAX_CONTENT_TYPES_XML:
                return False
            types = archive.read(info)
    except (zipfile.BadZipFile, KeyError, EOFError, ValueError, NotImplementedError, OSError):
        return False
    except RuntimeError:  # an encrypted member: a DOCX never encrypts its zip this way
        return False
    return any(name.encode() in types for name in WORD_MAIN)


# C0 control bytes no text file holds (tab, newlines and form feed aside): a binary file
# that happens to be valid UTF-8 (an ELF header, a GIF-like magic) holds some.
CONTROLS = bytes([*range(0, 9), 11, *range(14, 32), 127])


def _as_text(data: bytes) -> str | None:
    """The bytes as text when they are valid UTF-8 (a BOM allowed) without control bytes."""
    if len(data.translate(None, CONTROLS)) != len(data):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
