"""Layout helpers for synthetic documents: tables, party blocks, pages and OCR noise."""

from __future__ import annotations

import random
from collections.abc import Sequence

from corpus.fakes import Party


def table(
    rng: random.Random,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    grid: float = 0.0,
) -> list[str]:
    """Render a table the ways OCR engines return them: padded columns, pipes or tabs.

    With probability `grid` it is drawn as a ruled grid instead, as text exports of
    bordered tables read (`grid=0` draws nothing more from `rng`: old corpora stay as
    they were).
    """
    all_rows = [list(header), *[list(r) for r in rows]]
    if grid and rng.random() < grid:
        return ruled(all_rows)
    style = rng.choice(("pad", "pad", "pipe", "tab", "loose"))
    if style == "pad":
        widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]
        return [
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in all_rows
        ]
    separator = {"pipe": " | ", "tab": "\t", "loose": "   "}[style]
    return [separator.join(r) for r in all_rows]


def party_block(rng: random.Random, p: Party, title: str | None = None) -> list[str]:
    """A party's address block, sometimes with its contact details."""
    lines = [title] if title else []
    lines += p.address_lines()
    if rng.random() < 0.6:
        lines.append(f"Tel: {p.phone}" if rng.random() < 0.5 else f"Phone {p.phone}")
    if rng.random() < 0.5:
        lines.append(f"Email: {p.email}")
    if rng.random() < 0.5:
        lines.append(f"VAT No: {p.vat_id}" if rng.random() < 0.5 else f"VAT ID {p.vat_id}")
    return lines


def ruled(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows drawn as a grid of ASCII rules, the first row ruled off as the header."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    lines = [f"| {' | '.join(c.ljust(w) for c, w in zip(r, widths, strict=True))} |" for r in rows]
    return [rule, lines[0], rule, *lines[1:], rule]


def boxed(lines: Sequence[str]) -> list[str]:
    """`lines` drawn in a box of ASCII rules, as text exports of framed receipts read."""
    width = max((len(line) for line in lines), default=0)
    rule = "+" + "-" * (width + 2) + "+"
    return [rule, *(f"| {line.ljust(width)} |" for line in lines), rule]


def side_by_side(left: list[str], right: list[str], width: int = 44) -> list[str]:
    """Two blocks printed next to each other, as OCR reads two-column letterheads."""
    n = max(len(left), len(right))
    left = left + [""] * (n - len(left))
    right = right + [""] * (n - len(right))
    return [f"{a.ljust(width)}{b}".rstrip() for a, b in zip(left, right, strict=True)]


def paginate(
    rng: random.Random,
    lines: list[str],
    header: str,
    lines_per_page: int,
    footer: Sequence[str] = (),
) -> list[str]:
    """Cut a long document into pages, repeating a running header and a page footer.

    Multi-page business documents repeat their type and number on every page, which is
    also what lets a classifier label a window from the middle of a long document.
    `footer` (a company's registration and bank lines, corpus.footer) ends every page.
    """
    pages = [lines[i : i + lines_per_page] for i in range(0, len(lines), lines_per_page)] or [[]]
    if len(pages) == 1:
        return [*lines, "", *footer] if footer else lines
    total = len(pages)
    footer_style = rng.choice(("Page {i} of {n}", "- {i} -", "Page {i}/{n}", "{i}/{n}"))
    out: list[str] = []
    for i, page in enumerate(pages, start=1):
        if i > 1:
            out += ["", header + ("  (continued)" if rng.random() < 0.3 else ""), ""]
        out += page
        out += ["", *footer] if footer else []
        out += ["", footer_style.format(i=i, n=total), "\f" if rng.random() < 0.5 else ""]
    return out


_OCR_SWAPS = (
    ("O", "0"),
    ("0", "O"),
    ("l", "1"),
    ("1", "l"),
    ("I", "l"),
    ("rn", "m"),
    ("m", "rn"),
    ("e", "c"),
    ("S", "5"),
    ("B", "8"),
    ("a", "o"),
    ("i", "í"),
    (".", ","),
    (",", "."),
    ("h", "b"),
    ("u", "v"),
    ("cl", "d"),
    ("t", "f"),
)


def ocr_noise(rng: random.Random, text: str) -> str:
    """Add the errors of scanned paperwork: swapped glyphs, lost spaces, stray marks, lost lines.

    A third of documents stay clean; the rest get a per-document error rate, so the model
    sees both born-digital and badly scanned text.
    """
    level = rng.choice((0.0, 0.0, 0.004, 0.01, 0.02, 0.035))
    if level == 0.0:
        return text
    out_lines = []
    for line in text.split("\n"):
        if line and rng.random() < level * 2:
            continue  # a line the OCR engine missed
        chars = list(line)
        i = 0
        while i < len(chars):
            r = rng.random()
            if r < level:
                src, dst = rng.choice(_OCR_SWAPS)
                if "".join(chars[i : i + len(src)]) == src:
                    chars[i : i + len(src)] = list(dst)
            elif r < level * 1.4 and chars[i] == " ":
                chars[i] = ""  # merged words
            elif r < level * 1.6:
                chars.insert(i, rng.choice("|~_'`;:"))
            i += 1
        out_lines.append("".join(chars))
    return "\n".join(out_lines)
