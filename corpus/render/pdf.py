"""A layout drawn as a PDF with a text layer (fpdf2, DejaVu fonts embedded): the
born-digital PDF a business sends, and the page the scanned forms are rasterised from.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import TableBordersLayout
from fpdf.fonts import FontFace

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

# Debian's fonts-dejavu-core; the PDF embeds them, so readers need nothing installed.
FONTS = Path("/usr/share/fonts/truetype/dejavu")
# A fixed creation date: the same layout gives the same bytes.
CREATED = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


class _Page(FPDF):
    """An FPDF whose every page ends with the layout's footer and a page number."""

    def __init__(self, doc: Layout, family: str) -> None:
        super().__init__(format=(80, 240) if doc.narrow else "A4")
        self.doc, self.family = doc, family

    def footer(self) -> None:
        # A till roll has no page numbers.
        number = () if self.doc.narrow else (f"Page {self.page_no()} of {{nb}}",)
        lines = [*self.doc.footer, *number]
        self.set_y(-6 - 3.5 * len(lines))
        self.set_font(self.family, size=6.5)
        self.set_text_color(70)
        for line in lines:
            self.cell(0, 3.5, line, align="C", new_x="LMARGIN", new_y="NEXT")
        self.set_text_color(0)


def _draw(pdf: _Page, block: Block) -> None:
    f, width = pdf.family, pdf.epw
    small = 7.5 if pdf.doc.narrow else 9.0
    pdf.set_x(pdf.l_margin)  # a table or a signature line leaves x where it ended
    match block:
        case Letterhead(name, lines):
            top = pdf.get_y()
            pdf.set_fill_color(228, 232, 238)
            pdf.rect(pdf.l_margin, top, width, 8 + 4 * len(lines), style="F")
            pdf.set_font(f, "B", 11 if pdf.doc.narrow else 17)
            pdf.set_xy(pdf.l_margin + 2, top + 1)
            pdf.cell(width - 4, 7, name, align="C" if pdf.doc.narrow else "L", new_x="LMARGIN",
                     new_y="NEXT")  # fmt: skip
            pdf.set_font(f, size=small - 1.5)
            for line in lines:
                pdf.set_x(pdf.l_margin + 2)
                pdf.cell(width - 4, 4, line, align="C" if pdf.doc.narrow else "L",
                         new_x="LMARGIN", new_y="NEXT")  # fmt: skip
            pdf.set_y(top + 10 + 4 * len(lines))
        case Title(text):
            pdf.ln(2)
            pdf.set_font(f, "B", 12 if pdf.doc.narrow else 15)
            pdf.multi_cell(0, 8, text, align="C" if pdf.doc.narrow else "L")
            pdf.ln(1)
        case Heading(text):
            pdf.ln(2)
            pdf.set_font(f, "B", small + 1.5)
            pdf.multi_cell(0, 6, text)
        case Paragraph(text, small_text):
            pdf.set_font(f, size=small - (1 if small_text else 0))
            pdf.multi_cell(0, 4.6 if not pdf.doc.narrow else 3.8, text)
            pdf.ln(1.5)
        case Columns(left, right):
            pdf.set_font(f, size=small)
            top, half = pdf.get_y(), width / 2
            pdf.multi_cell(half - 4, 4.6, "\n".join(left))
            bottom = pdf.get_y()
            pdf.set_xy(pdf.l_margin + half + 4, top)
            pdf.multi_cell(half - 4, 4.6, "\n".join(right))
            pdf.set_y(max(bottom, pdf.get_y()) + 3)
        case Fields(pairs, per_row):
            pdf.set_font(f, size=small - 0.5)
            with pdf.table(first_row_as_headings=False, line_height=5, padding=1) as table:
                for i in range(0, len(pairs), per_row):
                    row = table.row()
                    for key, value in pairs[i : i + per_row]:
                        row.cell(key)
                        row.cell(value)
            pdf.ln(3)
        case Grid(header, rows, numeric):
            pdf.set_font(f, size=small - 1)
            align = tuple("RIGHT" if c in numeric else "LEFT" for c in range(len(header)))
            weights = tuple(max(len(r[c]) for r in (header, *rows)) + 2 for c in range(len(header)))
            with pdf.table(col_widths=weights, text_align=align, line_height=4.6, padding=1,
                           headings_style=FontFace(emphasis="BOLD", fill_color=(235, 235, 235))
                           ) as table:  # fmt: skip
                for r in (header, *rows):
                    row = table.row()
                    for cell in r:
                        row.cell(cell)
            pdf.ln(2)
        case Totals(pairs):
            pdf.set_font(f, size=small)
            box = width if pdf.doc.narrow else width * 0.45
            with pdf.table(width=box, align="RIGHT", first_row_as_headings=False,
                           text_align=("LEFT", "RIGHT"), line_height=5.5, padding=1,
                           borders_layout=TableBordersLayout.SINGLE_TOP_LINE) as table:  # fmt: skip
                for i, (key, value) in enumerate(pairs):
                    style = "B" if i == len(pairs) - 1 else ""
                    pdf.set_font(f, style, small)
                    row = table.row()
                    row.cell(key)
                    row.cell(value)
            pdf.ln(3)
        case Signatures(names):
            pdf.ln(12)
            pdf.set_font(f, size=small - 1)
            col = width / len(names)
            top = pdf.get_y()
            for n, name in enumerate(names):
                x = pdf.l_margin + n * col
                pdf.line(x, top, x + col - 8, top)
                pdf.set_xy(x, top + 1)
                pdf.cell(col - 8, 4, name)
            pdf.set_y(top + 8)


def to_pdf(doc: Layout) -> bytes:
    """The document as a PDF whose text can be selected and extracted."""
    # Contracts in a serif face, everything else sans: two families, as offices use.
    family = "DejaVuSerif" if doc.label == "contract" else "DejaVuSans"
    pdf = _Page(doc, family)
    pdf.set_creation_date(CREATED)
    pdf.set_title(doc.id)
    pdf.set_margins(5 if doc.narrow else 18, 8 if doc.narrow else 14)
    pdf.set_auto_page_break(True, margin=8 + 3.5 * (len(doc.footer) + 1))
    pdf.add_font(family, "", FONTS / f"{family}.ttf")
    pdf.add_font(family, "B", FONTS / f"{family}-Bold.ttf")
    pdf.add_page()
    for block in doc.blocks:
        _draw(pdf, block)
    return bytes(pdf.output())
