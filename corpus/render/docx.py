"""A layout as a Word file (python-docx): paragraphs, headings, ruled tables, the footer
in the section footer, as an office suite saves a letter or a form."""

from __future__ import annotations

import datetime as dt
import io
import zipfile

import docx
from docx.document import Document
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.shared import Pt

from corpus.render.blocks import (
    Block,
    Columns,
    Fields,
    Grid,
    Heading,
    Layout,
    Letterhead,
    Paragraph,
    Signatures,
    Title,
    Totals,
)

# Fixed dates, so that the same layout gives the same bytes: the core properties', and the
# zip entries' (python-docx dates them now), the day the blind set's renderings were frozen
# (samples/eval/forms.sha256).
CREATED = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
ZIP_DATE = (2026, 12, 5, 0, 0, 0)


def _table(document: Document, rows: list[tuple[str, ...]], ruled: bool = True) -> None:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    if ruled:
        table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value


def _add(document: Document, block: Block) -> None:
    match block:
        case Letterhead(name, lines):
            p = document.add_paragraph()
            run = p.add_run(name)
            run.bold, run.font.size = True, Pt(18)
            for line in lines:
                document.add_paragraph(line).runs[0].font.size = Pt(8)
        case Title(text):
            document.add_heading(text, level=1)
        case Heading(text):
            document.add_heading(text, level=2)
        case Paragraph(text, small):
            p = document.add_paragraph(text)
            if small:
                p.runs[0].font.size = Pt(8)
        case Columns(left, right):
            # Word users lay two blocks side by side with a table without borders.
            _table(document, [("\n".join(left), "\n".join(right))], ruled=False)
        case Fields(pairs, per_row):
            rows = [
                tuple(x for pair in pairs[i : i + per_row] for x in pair)
                for i in range(0, len(pairs), per_row)
            ]
            width = max(len(r) for r in rows)
            _table(document, [(*r, *[""] * (width - len(r))) for r in rows])
        case Grid(header, rows, _):
            _table(document, [header, *rows])
        case Totals(pairs):
            for i, (key, value) in enumerate(pairs):
                p = document.add_paragraph()
                p.alignment = WD_ALIGN_PARAGRAPH.RIGHT
                p.add_run(f"{key}  {value}").bold = i == len(pairs) - 1
        case Signatures(names):
            _table(document, [tuple("_" * 24 for _ in names), names], ruled=False)


def to_docx(doc: Layout) -> bytes:
    """The document as a .docx file whose paragraphs and tables hold all of its text."""
    document = docx.Document()
    document.core_properties.title = doc.id
    document.core_properties.created = CREATED
    document.core_properties.modified = CREATED
    for block in doc.blocks:
        _add(document, block)
    footer = document.sections[0].footer.paragraphs[0]
    footer.text = "\n".join(doc.footer)
    saved = io.BytesIO()
    document.save(saved)
    return _dated(saved.getvalue())


def _dated(data: bytes) -> bytes:
    """The same zip with every entry dated ZIP_DATE."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            target.writestr(fixed, source.read(info))
    return out.getvalue()
