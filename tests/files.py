"""Small real files for the upload tests, made here: a PDF written by hand (a text layer,
as a PDF printer writes it), a PNG and a DOCX from their own libraries, and broken ones."""

from __future__ import annotations

import io
from collections.abc import Callable
from types import ModuleType

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def pdf(*pages: str) -> bytes:
    """A valid PDF of one page per string, each with its text in Helvetica."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = "".join(
            f"BT /F1 11 Tf 40 {780 - 16 * n} Td ({line}) Tj ET\n"
            for n, line in enumerate(text.split("\n"))
        ).encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources "
            f"<< /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(lines) + lines + b"endstream")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % n + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def png(width: int = 64, height: int = 32) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(buf, "PNG")
    return buf.getvalue()


def docx(*paragraphs: str) -> bytes:
    import docx as python_docx

    document = python_docx.Document()
    for p in paragraphs:
        document.add_paragraph(p)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


INVOICE = "INVOICE No. 4711\nBill to: ACME GmbH\nTotal due: 1,250.00 EUR\nPayment within 30 days"


def _bad() -> ModuleType:
    from tests.docq.extract import badfiles  # its makers need pypdf (dev extras)

    return badfiles


_HONEST = pdf("Invoice 1001")
PDF, PNG, TEXT = "application/pdf", "image/png", "text/plain"

# The six bad kinds of issue 37's 63-file upload, and text that is not UTF-8: how each is
# made, the type it is sent as, the error_code its document ends with, and whether the API
# finds it at upload (else the extract worker does, reading it).
BAD_KINDS: list[tuple[str, Callable[[], bytes], str, str, bool]] = [
    ("random bytes named .pdf", lambda: bytes(range(1, 256)) * 64, PDF, "type_mismatch", True),
    ("an empty PDF", lambda: b"", PDF, "empty", True),
    (
        "a DOCX zip bomb",
        lambda: _bad()._docx_with("word/media/zeros.bin", bytes(8 << 20)),
        DOCX_TYPE,
        "too_large",
        False,
    ),
    ("a truncated PDF", lambda: _HONEST[: len(_HONEST) // 2], PDF, "truncated", False),
    ("an encrypted PDF", lambda: _bad()._pdf_encrypted(), PDF, "encrypted", False),
    (
        "a PNG of 100,000 x 100,000 pixels",
        lambda: _bad()._png_header(100_000, 100_000),
        PNG,
        "too_many_pixels",
        False,
    ),
    ("Latin-1 text", lambda: "caf\u00e9 cr\u00e8me".encode("latin-1"), TEXT, "not_utf8", True),
]
