"""The documents bench/extract.py reads: docq's synthetic business documents (corpus/) laid
out as text-layer PDF pages (Helvetica, 60 lines a page, written object by object) and as
300 dpi A4 scans (Pillow), with the words each page holds, to check what a reader got."""

from __future__ import annotations

import io
import textwrap
import zlib

from PIL import Image, ImageDraw, ImageFont

from corpus.doc_type import generate

A4_POINTS = (595, 842)
A4_300DPI = (2480, 3508)
LINES_PER_PAGE = 60
WIDTH = 95  # characters a line (10 pt Helvetica fits ~100 on A4 within the margins)


def pages(n_docs: int, seed: int = 21) -> list[list[str]]:
    """The corpus documents' lines, wrapped and cut into pages (latin-1: Helvetica's)."""
    out = []
    for document in generate(n_docs, seed):
        text = document.text.encode("latin-1", "replace").decode("latin-1")
        lines = [w for line in text.splitlines() for w in (textwrap.wrap(line, WIDTH) or [""])]
        out += [lines[i : i + LINES_PER_PAGE] for i in range(0, len(lines), LINES_PER_PAGE)]
    return out


def words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


def text_pdf(page_lines: list[list[str]]) -> bytes:
    """One PDF with a text layer page per item of page_lines."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]
    objects.append(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    )
    kids = []
    for lines in page_lines:
        body = [b"BT /F1 10 Tf 12 TL 50 800 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            body.append(b"(" + escaped.encode("latin-1") + b") Tj T*")
        stream = zlib.compress(b"\n".join([*body, b"ET"]))
        objects.append(
            b"<< /Filter /FlateDecode /Length %d >>\nstream\n" % len(stream)
            + stream
            + b"\nendstream"
        )
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents %d 0 R "
            b"/Resources << /Font << /F1 3 0 R >> >> >>" % (*A4_POINTS, len(objects))
        )
        kids.append(len(objects))
    refs = " ".join(f"{k} 0 R" for k in kids).encode()
    objects[1] = b"<< /Type /Pages /Kids [" + refs + b"] /Count %d >>" % len(kids)
    return pdf_file(objects, b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")


def pdf_file(objects: list[bytes], header: bytes) -> bytes:
    """A PDF of `objects` (numbered from 1, the catalog first), its xref table and trailer."""
    out = bytearray(header)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    trailer = b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
    return bytes(out + trailer % (len(objects) + 1, xref))


def scan(lines: list[str]) -> Image.Image:
    """A page as a 300 dpi A4 scan: the lines in a 10 pt-sized font, grey, on white."""
    image = Image.new("L", A4_300DPI, 255)
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=42)  # 10 pt at 300 dpi
    for row, line in enumerate(lines):
        draw.text((200, 180 + row * 52), line, fill=0, font=font)
    return image


def png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()
