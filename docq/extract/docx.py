"""Word documents (DOCX): paragraphs and tables in document order, through python-docx.

The zip is checked before python-docx opens it: the uncompressed sizes its directory
declares, summed, against max_decompressed_bytes, and each large member's compression ratio
against max_ratio (a zip bomb is a few KiB that declares gigabytes, or lies and compresses
1000:1). A member that inflates past its declared size fails zipfile's own check, so the
declared sizes bound what is read. python-docx parses XML with entity resolution off (no
billion laughs) and lxml's default depth limit.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator

import docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table
from docx.text.paragraph import Paragraph

from docq.errors import ExtractionFailed
from docq.extract.base import Extracted, Limits, finish
from docq.extract.sniff import is_docx

CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # OLE compound file: .doc, or an encrypted DOCX
ENCRYPTED_PACKAGE = "EncryptedPackage".encode("utf-16-le")  # the stream Office encrypts into
RATIO_FLOOR = 1 << 20  # members smaller than this may compress well without being a bomb


def extract_docx(data: bytes, limits: Limits) -> Extracted:
    """The document's paragraphs and table rows, one a line, in the order Word shows them."""
    if data.startswith(CFB_MAGIC):
        if ENCRYPTED_PACKAGE in data:
            raise ExtractionFailed("encrypted", "the Word document is password-protected")
        raise ExtractionFailed("type_mismatch", "an OLE file (a .doc?), not a DOCX")
    check_zip(data, limits)
    if not is_docx(data):
        raise ExtractionFailed("type_mismatch", "the zip is not a Word document")
    try:
        document = docx.Document(io.BytesIO(data))
    except PackageNotFoundError:
        raise ExtractionFailed("type_mismatch", "the zip is not a Word document") from None
    lines = list(blocks(document.element.body, document))
    return finish("\n".join(lines), 1, "text", limits)


def check_zip(data: bytes, limits: Limits) -> None:
    """The zip's directory: readable, not encrypted, and no bomb (before any member is read)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except zipfile.BadZipFile as exc:
        code = "truncated" if b"PK\x05\x06" not in data[-(1 << 16) - 22 :] else "unreadable"
        raise ExtractionFailed(code, f"the DOCX's zip cannot be read: {exc}") from None
    total = sum(m.file_size for m in members)
    if total > limits.max_decompressed_bytes:
        raise ExtractionFailed(
            "too_large",
            f"the DOCX unpacks to {total:,} bytes, more than {limits.max_decompressed_bytes:,}",
        )
    for member in members:
        if member.flag_bits & 0x1:
            raise ExtractionFailed("encrypted", f"zip member {member.filename} is encrypted")
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > RATIO_FLOOR and ratio > limits.max_ratio:
            raise ExtractionFailed(
                "too_large",
                f"zip member {member.filename} compresses {ratio:,.0f}:1 (a zip bomb?)",
            )


def blocks(body: object, parent: object) -> Iterator[str]:
    """Each paragraph's text, and each table row's cells joined by tabs, in order."""
    for child in body.iterchildren():  # type: ignore[attr-defined]
        if child.tag.endswith("}p"):
            yield Paragraph(child, parent).text  # type: ignore[arg-type]
        elif child.tag.endswith("}tbl"):
            for row in Table(child, parent).rows:  # type: ignore[arg-type]
                yield "\t".join(_cells(row))


def _cells(row: object) -> Iterator[str]:
    seen: set[int] = set()
    for cell in row.cells:  # type: ignore[attr-defined]
        if id(cell._tc) in seen:  # a merged cell appears once per grid column it spans
            continue
        seen.add(id(cell._tc))
        yield cell.text.replace("\n", " ")
