"""A document's text as a PDF's text layer (or an OCR engine) gives it back, not as typed.

Text extraction keeps the words but not the layout: column padding collapses to one space,
ruled lines and table borders are drawing, not text, two columns side by side come out one
after the other, long lines come back wrapped at the page's width (hyphenated at times),
and a label and its value, set in two cells, lose the colon between them. The demo model
trained on typed-looking text only; these are the generic ways a born-digital or scanned
file differs from it (issue 21), applied to a share of the training documents.
"""

from __future__ import annotations

import random
import re

_GAP = re.compile(r"\s{3,}|\t")  # a column gap: three spaces or more, or a tab
_RULE = re.compile(r"^[\s\-=_*+|.]+$")  # a line drawn with rule characters only
_LABEL = re.compile(r"^([A-Z][\w .#/()-]{1,30}):\s+(?=\S)")  # "Invoice date: ..."

# How often each change is made to a document that is read back as a text layer.
COLLAPSE, SPLIT_COLUMNS, WRAP, DROP_COLONS, DROP_RULES = 0.8, 0.5, 0.4, 0.5, 0.7


def _unbox(line: str) -> str:
    """A table row without its cell borders: "| a | b |" -> "a  b"."""
    if "|" not in line:
        return line
    return "  ".join(c.strip() for c in line.strip().strip("|").split("|"))


def _columns(lines: list[str]) -> list[str]:
    """Runs of two-column lines read column by column: the left cells, then the right ones."""
    out: list[str] = []
    left: list[str] = []
    right: list[str] = []
    for line in [*lines, ""]:
        cells = _GAP.split(line.strip()) if line.strip() else []
        if len(cells) == 2 and len(line) - len(line.lstrip()) < 8:  # exactly one gap
            left.append(cells[0])
            right.append(cells[1])
            continue
        if len(left) >= 2:  # a block side by side; a single split line is a table row
            out += [*left, *right]
        else:
            out += [f"{a}   {b}" for a, b in zip(left, right, strict=True)]
        left, right = [], []
        out.append(line)
    return out[:-1]


def _wrap(rng: random.Random, line: str, width: int) -> list[str]:
    """`line` broken at `width`, a long word split with a hyphen now and then."""
    out: list[str] = []
    while len(line) > width:
        cut = line.rfind(" ", 0, width)
        word_end = line.find(" ", cut + 1)
        word = line[cut + 1 : word_end if word_end > 0 else len(line)]
        if len(word) >= 8 and word.isalpha() and rng.random() < 0.4 and cut + 5 < width:
            keep = min(width - cut - 2, len(word) - 3)
            if keep >= 3:
                out.append(line[: cut + 1 + keep] + "-")
                line = line[cut + 1 + keep :]
                continue
        if cut <= 0:
            cut = width
        out.append(line[:cut].rstrip())
        line = line[cut:].lstrip()
    out.append(line)
    return out


def text_layer(rng: random.Random, text: str) -> str:
    """`text` as extraction returns it: each change in COLLAPSE ... DROP_RULES made or not."""
    lines = text.split("\n")
    if rng.random() < SPLIT_COLUMNS:
        lines = _columns(lines)
    if rng.random() < DROP_RULES:
        lines = [ln for ln in lines if not (ln.strip() and _RULE.match(ln))]
    if rng.random() < COLLAPSE:
        lines = [" ".join(_unbox(ln).split()) for ln in lines]
        if rng.random() < 0.5:  # no blank lines between blocks either
            lines = [ln for ln in lines if ln]
    if rng.random() < DROP_COLONS:
        lines = [_LABEL.sub(r"\1 ", ln) for ln in lines]
    if rng.random() < WRAP:
        width = rng.randint(55, 95)
        lines = [part for ln in lines for part in _wrap(rng, ln, width)]
    return "\n".join(lines)
