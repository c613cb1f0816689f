# ruff: noqa: E501  (the catalogue is a table: one kind a line reads best)
"""The bad-files catalogue (issue 21, part 4): each kind of hostile, broken or lying file,
made by code, with what docq must answer: the ExtractionFailed code extract() raises (or, for
the kinds the API refuses at upload, what sniff() says: None is a 415)."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

from pypdf import PdfWriter

from docq.extract import Limits
from docq.extract.base import DOCX, HTML, JPEG, PDF, PNG, TEXT, TIFF
from tests.docq.extract import samples

FAST = Limits(ocr_dpi=72, max_pages=5, max_decompressed_bytes=8 << 20)  # small, so bombs are quick


@dataclass(frozen=True)
class BadFile:
    """One kind: how to make it, the type it claims, and the code docq must answer."""

    name: str
    make: Callable[[], bytes]
    content_type: str
    code: str  # ExtractionFailed.code from extract()
    limits: Limits = field(default=FAST)


@dataclass(frozen=True)
class Unsniffable:
    """A kind the API refuses at upload: sniff() names none of the types docq reads."""

    name: str
    make: Callable[[], bytes]


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buf.getvalue()


def _docx_with(name: str, body: bytes) -> bytes:
    """A real DOCX with one member replaced (or added)."""
    with zipfile.ZipFile(io.BytesIO(samples.word(["An honest paragraph of text."]))) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members[name] = body
    return _zip(members)


def _docx_member_flagged_encrypted() -> bytes:
    data = bytearray(samples.word(["A paragraph behind a zip password."]))
    central = data.index(b"PK\x01\x02")
    data[central + 8] |= 0x1  # the central directory's "encrypted" flag of the first member
    return bytes(data)


def _pdf_encrypted() -> bytes:
    writer = PdfWriter(clone_from=io.BytesIO(samples.pdf(["A password-protected invoice"])))
    writer.encrypt(user_password="secret", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _flate(raw: bytes, extra: bytes = b"") -> bytes:
    body = zlib.compress(raw, 9)
    return (
        b"<< "
        + extra
        + b"/Filter /FlateDecode /Length %d >>\nstream\n" % len(body)
        + body
        + b"\nendstream"
    )


def _pdf_content_bomb() -> bytes:
    return samples.pdf(["A page"], extra=[_flate(b"0 " * (16 << 20))])  # 32 MB of operands


def _pdf_object_stream_bomb() -> bytes:
    return samples.pdf(
        ["A page"], extra=[_flate(b" " * (32 << 20), b"/Type /ObjStm /N 1 /First 4 ")]
    )


def _pdf_image(width: int, height: int, raw: bytes) -> bytes:
    """A PDF whose page shows one grey image that declares width x height and holds raw."""
    image = _flate(
        raw,
        b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        % (width, height),
    )
    return samples.pdf(["A page with an image"], extra=[image])


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares width x height grey pixels and holds a few bytes of them."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\0" * 64))
        + chunk(b"IEND", b"")
    )


def _tiff_header(width: int, height: int) -> bytes:
    """A little-endian TIFF whose one frame declares width x height grey pixels."""
    entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, 1), (262, 3, 1),
               (273, 4, 8), (277, 3, 1), (278, 4, height), (279, 4, 1)]  # fmt: skip
    ifd = struct.pack("<H", len(entries))
    ifd += b"".join(struct.pack("<HHII", tag, kind, 1, value) for tag, kind, value in entries)
    return b"II*\x00" + struct.pack("<I", 8) + ifd + b"\x00\x00\x00\x00"


def _page(lines: list[str]) -> bytes:
    return samples.image_bytes(samples.page_image(lines, (620, 877)), "PNG")


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _corrupt(data: bytes, at: int = 200, length: int = 64) -> bytes:
    return data[:at] + bytes(length) + data[at + length :]


_HONEST_PDF = samples.pdf(["Invoice 1001", "Page two of it"])
_HONEST_DOCX = samples.word(["An honest contract"], [["Item", "Price"]])
_WORD_TYPES = (
    b'<Types><Override PartName="/word/document.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;'
    b'&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><w:document xmlns:w='
    b'"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>'
    b"&c;</w:t></w:r></w:p></w:body></w:document>"
)

CATALOGUE: list[BadFile] = [
    # PDF
    BadFile("pdf cut in half (a broken download)", lambda: _cut(_HONEST_PDF), PDF, "truncated"),
    BadFile("pdf with a user password", _pdf_encrypted, PDF, "encrypted"),
    BadFile("pdf header then garbage", lambda: b"%PDF-1.7\n\x00\x01 garbage\n%%EOF\n", PDF, "unreadable"),
    BadFile("pdf with its objects overwritten", lambda: _corrupt(_HONEST_PDF, 15, 400), PDF, "unreadable"),
    BadFile("pdf with more pages than the limit", lambda: samples.pdf(["p"] * 6), PDF, "too_many_pages"),
    BadFile("pdf content stream bomb (32 MB of zeros)", _pdf_content_bomb, PDF, "too_large"),
    BadFile("pdf object stream bomb (/ObjStm, 32 MB)", _pdf_object_stream_bomb, PDF, "too_large"),
    BadFile("pdf image declaring 100,000 x 100,000 pixels", lambda: _pdf_image(100_000, 100_000, bytes(1000)), PDF, "too_many_pixels"),
    BadFile("pdf image inflating past its declared size", lambda: _pdf_image(10, 10, bytes(4 << 20)), PDF, "too_large"),
    BadFile("pdf with no pages", lambda: samples.serialize([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]), PDF, "unreadable"),
    BadFile("pdf of blank pages (OCR finds nothing)", lambda: samples.pdf([None, None]), PDF, "no_text"),
    BadFile("pdf scan past the time limit", lambda: samples.pdf([samples.page_image(["slow scan"])] * 2), PDF, "timeout", Limits(timeout_s=1e-9)),
    BadFile("pdf claimed, bytes are a PNG", lambda: _page(["not a pdf"]), PDF, "type_mismatch"),
    BadFile("pdf claimed, bytes are a DOCX", lambda: _HONEST_DOCX, PDF, "type_mismatch"),
    # images
    BadFile("png of 100,000 x 100,000 pixels (a few bytes)", lambda: _png_header(100_000, 100_000), PNG, "too_many_pixels"),
    BadFile("png just over the pixel limit", lambda: _png_header(8000, 7501), PNG, "too_many_pixels"),
    BadFile("tiff frame of 100,000 x 100,000 pixels", lambda: _tiff_header(100_000, 100_000), TIFF, "too_many_pixels"),
    BadFile("tiff with more frames than the page limit", lambda: samples.tiff_pages([samples.page_image(["f"], (200, 100))] * 6), TIFF, "too_many_pages"),
    BadFile("png cut in half", lambda: _cut(_page(["cut short"])), PNG, "truncated"),
    BadFile("jpeg cut in half", lambda: _cut(samples.image_bytes(samples.page_image(["cut"], (620, 877)), "JPEG")), JPEG, "truncated"),
    BadFile("png with zeroed image data", lambda: _corrupt(_page(["corrupt"])), PNG, "unreadable"),
    BadFile("png with a broken header", lambda: _corrupt(_page(["x"]), 16, 8), PNG, "unreadable"),
    BadFile("png of zero width", lambda: _png_header(0, 100), PNG, "unreadable"),
    BadFile("blank scan", lambda: samples.image_bytes(samples.page_image([], (620, 877)), "PNG"), PNG, "no_text"),
    BadFile("png claimed, bytes are a JPEG", lambda: samples.image_bytes(samples.page_image(["j"], (200, 100)), "JPEG"), PNG, "type_mismatch"),
    BadFile("jpeg claimed, bytes are a TIFF", lambda: samples.tiff_pages([samples.page_image(["t"], (200, 100))]), JPEG, "type_mismatch"),
    BadFile("tiff claimed, bytes are text", lambda: b"just some text", TIFF, "type_mismatch"),
    # DOCX
    BadFile("docx zip bomb (declares 33 MB)", lambda: _docx_with("word/media/zeros.bin", bytes(33 << 20)), DOCX, "too_large", Limits(max_decompressed_bytes=32 << 20)),
    BadFile("docx member compressed 1000:1", lambda: _docx_with("word/media/zeros.bin", bytes(4 << 20)), DOCX, "too_large", Limits()),
    BadFile("docx cut in half", lambda: _cut(_HONEST_DOCX), DOCX, "truncated"),
    BadFile("docx with a zip-encrypted member", _docx_member_flagged_encrypted, DOCX, "encrypted"),
    BadFile("docx password-protected (an OLE EncryptedPackage)", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500) + "EncryptedPackage".encode("utf-16-le") + bytes(500), DOCX, "encrypted"),
    BadFile("docx claimed, bytes are a .doc (OLE)", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1000), DOCX, "type_mismatch"),
    BadFile("docx claimed, bytes are a plain zip", lambda: _zip({"notes.txt": b"hello"}), DOCX, "type_mismatch"),
    BadFile("docx claimed, bytes are an XLSX", lambda: _docx_with("[Content_Types].xml", b'<Types><Override ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>'), DOCX, "type_mismatch"),
    BadFile("docx claimed, bytes are a PDF", lambda: _HONEST_PDF, DOCX, "type_mismatch"),
    BadFile("docx with malformed document.xml", lambda: _docx_with("word/document.xml", b"<w:document><w:body"), DOCX, "unreadable"),
    BadFile("docx with an entity bomb (billion laughs)", lambda: _docx_with("word/document.xml", _LAUGHS), DOCX, "no_text"),
    BadFile("docx without document.xml", lambda: _zip({"[Content_Types].xml": _WORD_TYPES}), DOCX, "unreadable"),
    BadFile("docx of empty paragraphs", lambda: samples.word(["", "   "]), DOCX, "no_text"),
    # text and HTML
    BadFile("text that is Latin-1, not UTF-8", lambda: "caf\u00e9 cr\u00e8me".encode("latin-1"), TEXT, "not_utf8"),
    BadFile("text with NUL bytes", lambda: b"name\x00value", TEXT, "not_utf8"),
    BadFile("text claimed, bytes are a PDF", lambda: _HONEST_PDF, TEXT, "type_mismatch"),
    BadFile("text of only whitespace", lambda: b" \n\t\r\n ", TEXT, "no_text"),
    BadFile("text larger than the limit", lambda: b"a" * (9 << 20), TEXT, "too_large"),
    BadFile("html of only a script", lambda: b"<html><body><script>steal()</script></body></html>", HTML, "no_text"),
    BadFile("html claimed, bytes are a PNG", lambda: _page(["png"]), HTML, "type_mismatch"),
    BadFile("a type docq does not read (GIF)", lambda: b"GIF89a\x01\x00\x01\x00", "image/gif", "unsupported_type"),
]  # fmt: skip

UNSNIFFABLE: list[Unsniffable] = [
    Unsniffable("an ELF executable", lambda: b"\x7fELF\x02\x01\x01\x00" + bytes(56)),
    Unsniffable("a GIF", lambda: b"GIF89a\x01\x00\x01\x00\x80\x00\x00"),
    Unsniffable("a plain zip", lambda: _zip({"notes.txt": b"hello"})),
    Unsniffable("an OLE .doc", lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(1000)),
    Unsniffable("a zip cut before its directory", lambda: _cut(_HONEST_DOCX)),
    Unsniffable("Latin-1 text", lambda: "na\u00efve caf\u00e9".encode("latin-1")),
    Unsniffable("UTF-16 text (NUL bytes)", lambda: "hello".encode("utf-16")),
]
