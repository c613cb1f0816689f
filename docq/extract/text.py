"""Plain text and HTML: the two formats that need no parser of files, only of characters.

HTML goes through selectolax (the Lexbor engine: a browser's tolerant HTML5 parser in C,
maintained, about 10x faster than lxml's html module on e-mail-sized pages, and it never
fetches anything): scripts, styles, templates and comments are dropped, block elements
end lines so that words of two cells do not run together.
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from docq.errors import ExtractionFailed
from docq.extract.base import Extracted, Limits, finish

# Elements whose content is not text a reader sees.
HIDDEN = ("script", "style", "noscript", "template", "head", "svg", "iframe", "object")
# Elements that start a new line where a browser lays them out (inline ones do not).
BLOCKS = frozenset({
    "p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "table",
    "section", "article", "header", "footer", "blockquote", "pre", "hr", "dt", "dd", "address",
    "caption", "form", "fieldset", "figure", "figcaption", "main", "nav", "aside", "ul", "ol", "dl",
})  # fmt: skip
_BLANK_LINES = re.compile(r"\n\s*\n+")
_SPACES = re.compile(r"[ \t\r\f\v\u00a0]+")


def decode(data: bytes) -> str:
    """The bytes as UTF-8 text (a BOM dropped), or "not_utf8"."""
    if b"\x00" in data:
        raise ExtractionFailed("not_utf8", "the text holds NUL bytes: not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExtractionFailed(
            "not_utf8", f"the text is not UTF-8 (byte {exc.start}: {exc.reason})"
        ) from None


def extract_text(data: bytes, limits: Limits) -> Extracted:
    """Plain text: one page, read as it is."""
    if len(data) > limits.max_decompressed_bytes:
        raise ExtractionFailed("too_large", f"{len(data)} bytes of text exceed the limit")
    return finish(decode(data), 1, "text", limits)


def extract_html(data: bytes, limits: Limits) -> Extracted:
    """HTML: the text a reader sees, without markup, scripts or styles."""
    if len(data) > limits.max_decompressed_bytes:
        raise ExtractionFailed("too_large", f"{len(data)} bytes of HTML exceed the limit")
    tree = LexborHTMLParser(decode(data))
    tree.strip_tags(list(HIDDEN))
    root = tree.body if tree.body is not None else tree.root
    if root is None:
        raise ExtractionFailed("no_text", "the HTML has no body")
    parts: list[str] = []
    for node in root.traverse(include_text=True):
        if node.tag == "-text":
            parts.append(node.text_content or "")
        elif node.tag in BLOCKS:
            parts.append("\n")  # a block starts a line: cells and paragraphs stay apart
    return finish(tidy("".join(parts)), 1, "text", limits)


def tidy(text: str) -> str:
    """Runs of spaces as one, at most one blank line between blocks."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANK_LINES.sub("\n\n", "\n".join(lines))
