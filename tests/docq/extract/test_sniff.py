"""docq/extract/sniff.py: the content type from the bytes, whatever the file is called."""

from __future__ import annotations

import io
import zipfile

import pytest

from docq.extract import CONTENT_TYPES, sniff
from docq.extract.base import DOCX, HTML, JPEG, PDF, PNG, TEXT, TIFF


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buf.getvalue()


WORD_TYPES = (
    b'<?xml version="1.0"?><Types><Override PartName="/word/document.xml" ContentType='
    b'"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
EXCEL_TYPES = WORD_TYPES.replace(b"wordprocessingml.document.main", b"spreadsheetml.sheet.main")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", PDF),
        (b"junk before the header %PDF-1.4\n", PDF),  # readers accept a prefix
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", PNG),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", JPEG),
        (b"II*\x00\x08\x00\x00\x00", TIFF),
        (b"MM\x00*\x00\x00\x00\x08", TIFF),
        (_zip({"[Content_Types].xml": WORD_TYPES, "word/document.xml": b"<w/>"}), DOCX),
        (b"<!DOCTYPE html><html><body><p>Hi</p></body></html>", HTML),
        (b"\xef\xbb\xbf  <html lang=en><p>BOM and spaces first</p>", HTML),
        (b"Invoice 42\nTotal: 10 EUR\n", TEXT),
        ("Facture n\u00b0 42 \u2014 total 10 \u20ac".encode(), TEXT),
        (b"a < b and c > d, not markup", TEXT),
        (b"", TEXT),  # empty is valid UTF-8: extract says no_text
        # none of the types
        (_zip({"[Content_Types].xml": EXCEL_TYPES}), None),  # an XLSX is not a DOCX
        (_zip({"readme.txt": b"plain zip"}), None),
        (b"PK\x03\x04truncated zip", None),
        (b"GIF89a\x01\x00\x01\x00", None),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1 an OLE file (.doc)", None),
        (b"text with a NUL\x00 byte", None),
        (b"latin-1 caf\xe9", None),  # not UTF-8
        (b"\x7fELF\x02\x01\x01", None),  # valid UTF-8, but control bytes
        (b"tab\tform feed\x0c CRLF\r\n", TEXT),
    ],
)
def test_sniff_names_the_type_the_bytes_are(data: bytes, expected: str | None) -> None:
    assert sniff(data) == expected


def test_every_answer_is_one_of_the_content_types() -> None:
    assert {PDF, PNG, JPEG, TIFF, DOCX, HTML, TEXT} == CONTENT_TYPES


def test_a_zip_with_an_oversized_content_types_part_is_not_trusted() -> None:
    huge = WORD_TYPES + b" " * (2 << 20)
    assert sniff(_zip({"[Content_Types].xml": huge})) is None
