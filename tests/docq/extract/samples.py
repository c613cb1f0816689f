"""Sample files made by code, for the extraction tests: PDFs written object by object (so a
test controls every byte: a text layer, a scanned page, a bomb, a broken xref), DOCX through
python-docx, page images drawn with Pillow."""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence

import docx
from PIL import Image, ImageDraw, ImageFont

A4_POINTS = (595, 842)


def page_image(
    lines: list[str], size: tuple[int, int] = (1240, 1754), mode: str = "L"
) -> Image.Image:
    """A page as a scanner sees it: black text on white, 150 dpi A4 by default."""
    image = Image.new(mode, size, "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=max(12, size[0] // 40))
    for row, line in enumerate(lines):
        draw.text(
            (size[0] // 12, size[1] // 12 + row * size[0] // 22), line, fill="black", font=font
        )
    return image


def image_bytes(image: Image.Image, fmt: str, **options: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **options)
    return buf.getvalue()


def tiff_pages(images: list[Image.Image]) -> bytes:
    buf = io.BytesIO()
    images[0].save(buf, "TIFF", save_all=True, append_images=images[1:], compression="tiff_deflate")
    return buf.getvalue()


def _escape(text: str) -> bytes:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def pdf(pages: Sequence[str | Image.Image | None], extra: list[bytes] | None = None) -> bytes:
    """A PDF whose pages are text (a text layer in Helvetica), an image (a scan, no text
    layer) or None (blank). `extra` objects are appended as they are (bombs, junk)."""
    objects: list[bytes] = [b"<< /Type /Catalog /Pages 2 0 R >>", b""]  # 2: the page tree
    font = 3
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    kids = []
    for page in pages:
        resources = f"<< /Font << /F1 {font} 0 R >>".encode()
        if isinstance(page, Image.Image):
            grey = page.convert("L")
            body = zlib.compress(grey.tobytes())
            objects.append(
                f"<< /Type /XObject /Subtype /Image /Width {grey.width} /Height {grey.height} "
                f"/ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode "
                f"/Length {len(body)} >>\nstream\n".encode()
                + body
                + b"\nendstream"
            )
            resources += f" /XObject << /Im1 {len(objects)} 0 R >>".encode()
            content = f"q {A4_POINTS[0]} 0 0 {A4_POINTS[1]} 0 0 cm /Im1 Do Q".encode()
        elif isinstance(page, str):
            lines = [b"BT /F1 12 Tf 14 TL 72 770 Td"]
            lines += [b"(" + _escape(line) + b") Tj T*" for line in page.splitlines()]
            content = b"\n".join([*lines, b"ET"])
        else:
            content = b""
        resources += b" >>"
        objects.append(
            f"<< /Length {len(content)} >>\nstream\n".encode() + content + b"\nendstream"
        )
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {A4_POINTS[0]} {A4_POINTS[1]}] "
            f"/Contents {len(objects)} 0 R /Resources ".encode()
            + resources
            + b" >>"
        )
        kids.append(len(objects))
    refs = " ".join(f"{k} 0 R" for k in kids)
    objects[1] = f"<< /Type /Pages /Kids [{refs}] /Count {len(kids)} >>".encode()
    objects += extra or []
    return serialize(objects)


def serialize(objects: list[bytes]) -> bytes:
    """Objects 1..n with a correct cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return bytes(out)


def word(
    paragraphs: list[str], table: list[list[str]] | None = None, after: list[str] | None = None
) -> bytes:
    """A DOCX: paragraphs, then a table (rows of cells), then more paragraphs."""
    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, text in enumerate(row):
                grid.cell(r, c).text = text
    for text in after or []:
        document.add_paragraph(text)
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()
