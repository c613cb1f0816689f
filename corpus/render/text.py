"""A layout as plain text and as an HTML e-mail: the born-digital forms of a document.

The text form draws what a text export of such a page gives: the letterhead centred, two
columns side by side, grids ruled with `+---+`, totals flush right, the footer at the end.
None of those shapes occurs in the training corpus (corpus/layout.py).
"""

from __future__ import annotations

import html
import textwrap

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


def _ruled(
    header: tuple[str, ...], rows: list[tuple[str, ...]], numeric: tuple[int, ...]
) -> list[str]:
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(row: tuple[str, ...]) -> str:
        cells = [
            v.rjust(w) if c in numeric else v.ljust(w)
            for c, (v, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "| " + " | ".join(cells) + " |"

    return [rule, line(header), rule, *(line(r) for r in rows), rule]


def _block_text(block: Block, width: int) -> list[str]:
    match block:
        case Letterhead(name, lines):
            return [name.upper().center(width).rstrip(), *(x.center(width).rstrip() for x in lines),
                    "=" * width]  # fmt: skip
        case Title(text):
            return ["", text.upper(), ""]
        case Heading(text):
            return ["", text]
        case Paragraph(text, _):
            return textwrap.wrap(text, width)
        case Columns(left, right):
            half = width // 2
            n = max(len(left), len(right))
            lefts, rights = [*left, *[""] * (n - len(left))], [*right, *[""] * (n - len(right))]
            return [f"{a.ljust(half)}{b}".rstrip() for a, b in zip(lefts, rights, strict=True)]
        case Fields(pairs, per_row):
            rows = [pairs[i : i + per_row] for i in range(0, len(pairs), per_row)]
            flat = [tuple(f"{k}: {v}" for k, v in r) for r in rows]
            flat = [(*r, *[""] * (per_row - len(r))) for r in flat]
            return _ruled(flat[0], flat[1:], ()) if len(flat) > 1 else _ruled(flat[0], [], ())
        case Grid(header, rows, numeric):
            return _ruled(header, list(rows), numeric)
        case Totals(pairs):
            key = max(len(k) for k, _ in pairs)
            return [f"{k.ljust(key)}  {v:>14}".rjust(width) for k, v in pairs]
        case Signatures(names):
            return [
                "",
                "    ".join("_" * 28 for _ in names),
                "    ".join(n.ljust(28) for n in names),
            ]
    raise TypeError(f"not a block: {block!r}")


def to_text(doc: Layout) -> str:
    """The document as plain text, lines at most about 90 characters wide (40 for a till roll)."""
    width = 40 if doc.narrow else 90
    lines: list[str] = []
    for block in doc.blocks:
        lines += _block_text(block, width)
    if doc.footer:
        lines += ["", "-" * width, *doc.footer]
    return "\n".join(lines) + "\n"


def _block_html(block: Block) -> str:
    e = html.escape
    match block:
        case Letterhead(name, lines):
            return (
                f'<div class="letterhead"><h2>{e(name)}</h2>'
                + "".join(f"<div>{e(x)}</div>" for x in lines)
                + "</div>"
            )
        case Title(text):
            return f"<h1>{e(text)}</h1>"
        case Heading(text):
            return f"<h3>{e(text)}</h3>"
        case Paragraph(text, small):
            return f"<p><small>{e(text)}</small></p>" if small else f"<p>{e(text)}</p>"
        case Columns(left, right):
            cell = lambda xs: "<br>".join(e(x) for x in xs)  # noqa: E731
            return f"<table><tr><td>{cell(left)}</td><td>{cell(right)}</td></tr></table>"
        case Fields(pairs, _):
            return (
                '<table border="1">'
                + "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in pairs)
                + "</table>"
            )
        case Grid(header, rows, _):
            head = "".join(f"<th>{e(h)}</th>" for h in header)
            body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
            return f'<table border="1"><tr>{head}</tr>{body}</table>'
        case Totals(pairs):
            return (
                '<table align="right">'
                + "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in pairs)
                + "</table>"
            )
        case Signatures(names):
            return "<p>" + " &nbsp; ".join(f"____________ {e(n)}" for n in names) + "</p>"
    raise TypeError(f"not a block: {block!r}")


def to_html(doc: Layout) -> str:
    """The document as the body of an HTML e-mail (a head with styles, tables for layout)."""
    body = "\n".join(_block_html(b) for b in doc.blocks)
    foot = "".join(f"<div>{html.escape(x)}</div>" for x in doc.footer)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>'
        f"{html.escape(doc.id)}</title><style>body{{font-family:sans-serif}} "
        "td,th{padding:2px 6px}</style></head>\n<body>\n"
        f'{body}\n<hr><footer style="font-size:small">{foot}</footer>\n</body></html>\n'
    )
