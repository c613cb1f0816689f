"""The upload of issue 37's scenario: 57 good files (PDFs with a text layer, scanned PNGs,
DOCX: corpus.render, labels known) and the six bad kinds users hold, each made by code:

- random bytes named .pdf;
- a DOCX zip bomb (a real DOCX plus a member of 1 GiB of zeros, about 1 MB compressed);
- an empty PDF (0 bytes);
- a truncated PDF (a real one cut in half, as a broken download);
- an encrypted PDF (a user password, fpdf2's RC4);
- a PNG whose header declares 100,000 x 100,000 pixels (a few hundred bytes).

Each bad file comes with the error_code its document must end with.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from dataclasses import dataclass

from fpdf import FPDF

from corpus.render.files import Form, render, scan_form
from corpus.render.layouts import generate

PDF, PNG = "application/pdf", "image/png"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
TYPES = {"pdf": PDF, "png": PNG, "docx": DOCX}


@dataclass(frozen=True)
class File:
    """One part of the upload: its name, bytes and declared type; `label` for a good file,
    `code` (the error_code it must end with) for a bad one."""

    name: str
    data: bytes
    content_type: str
    label: str | None = None
    code: str | None = None


def good(n: int, seed: int, scans: int, docx: int) -> list[File]:
    """`n` good files: `scans` scanned PNGs (150 dpi, grey: a phone's), `docx` DOCX, the
    rest PDFs with a text layer; labels balanced (corpus.render.layouts.generate)."""
    forms = [scan_form("png", 150)] * scans + [Form("docx", "docx")] * docx
    forms += [Form("pdf", "pdf")] * (n - len(forms))
    random.Random(seed).shuffle(forms)
    out = []
    for doc, form in zip(generate(n, seed), forms, strict=True):
        ext = form.extension
        out.append(File(f"{doc.id}.{ext}", render(doc, form), TYPES[ext], label=doc.label))
    return out


def _encrypted_pdf() -> bytes:
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="INVOICE 9001 - confidential, total due 4,200.00 EUR")
    pdf.set_encryption(owner_password="owner", user_password="secret")
    return bytes(pdf.output())


def _zip_bomb(docx: bytes, declared: int = 1 << 30) -> bytes:
    """`docx` with a member of `declared` bytes of zeros, written in steps (never held)."""
    buf = io.BytesIO(docx)
    step = bytes(1 << 20)
    with (
        zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/zeros.bin", "w", force_zip64=True) as member,
    ):
        for _ in range(declared >> 20):
            member.write(step)
    return buf.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares width x height grey pixels and holds a few bytes of them."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = chunk(b"IDAT", zlib.compress(b"\0" * 64))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + idat + chunk(b"IEND", b"")


def bad(seed: int, pdf: bytes, docx: bytes) -> list[File]:
    """The six bad kinds, from a good `pdf` and `docx` where they need one."""
    noise = random.Random(seed).randbytes(64 * 1024)
    return [
        File("random-bytes.pdf", noise, PDF, code="type_mismatch"),
        File("zip-bomb.docx", _zip_bomb(docx), DOCX, code="too_large"),
        File("empty.pdf", b"", PDF, code="empty"),
        File("truncated.pdf", pdf[: len(pdf) // 2], PDF, code="truncated"),
        File("encrypted.pdf", _encrypted_pdf(), PDF, code="encrypted"),
        File("huge.png", _png_header(100_000, 100_000), PNG, code="too_many_pixels"),
    ]


def upload(seed: int = 37, n_good: int = 57, scans: int = 12, docx: int = 12) -> list[File]:
    """The 63 files in upload order: the bad ones spread among the good ones."""
    files = good(n_good, seed, scans, docx)
    some_pdf = next(f.data for f in files if f.content_type == PDF)
    some_docx = next(f.data for f in files if f.content_type == DOCX)
    out = list(files)
    for k, b in enumerate(bad(seed, some_pdf, some_docx)):
        out.insert(5 + k * (len(out) // 6), b)
    return out
