"""The layout of a rendered document as blocks, so one template can be drawn as text, PDF,
scanned page, DOCX or HTML.

The training corpus (corpus/doc_type.py) writes plain lines; these blocks carry what a
drawn page has and those lines do not: a letterhead band, two-column blocks, tables ruled
as grids, boxed totals and a footer repeated on every page.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Letterhead:
    """The sender's band across the top: name large, then one or two small lines."""

    name: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Title:
    """The document's heading (its type and number, as the template words it)."""

    text: str


@dataclass(frozen=True)
class Heading:
    """A section heading inside the document (a clause, "Items", "Payment")."""

    text: str


@dataclass(frozen=True)
class Paragraph:
    """Running text, wrapped by the renderer."""

    text: str
    small: bool = False


@dataclass(frozen=True)
class Columns:
    """Two blocks side by side: an address window and a reference block, say."""

    left: tuple[str, ...]
    right: tuple[str, ...]


@dataclass(frozen=True)
class Fields:
    """Label/value pairs drawn as a ruled grid of `per_row` pairs a row."""

    pairs: tuple[tuple[str, str], ...]
    per_row: int = 2


@dataclass(frozen=True)
class Grid:
    """A table ruled as a grid; `numeric` marks the columns aligned right."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...] = ()


@dataclass(frozen=True)
class Totals:
    """Label/amount lines in a box at the right margin; the last one is bold."""

    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Signatures:
    """Signature lines side by side, one per named signatory."""

    names: tuple[str, ...]


Block = Letterhead | Title | Heading | Paragraph | Columns | Fields | Grid | Totals | Signatures


@dataclass(frozen=True)
class Layout:
    """A whole document: its blocks, the footer on every page and its true class."""

    id: str
    label: str
    template: str  # which unseen template wrote it
    blocks: tuple[Block, ...]
    footer: tuple[str, ...] = ()
    narrow: bool = False  # a till roll (80 mm) rather than an A4 page
