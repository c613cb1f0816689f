"""Labelled documents in the forms users send: plain text, a PDF with a text layer, a DOCX
and a page scanned at 300 dpi. Two sets: the blind evaluation set (samples/eval/, issue 38)
and the generator's unseen templates (corpus.render.layouts, issue 21).

The drawing is the project's own (corpus.render). A blind text becomes a Layout of blocks
(one per run of lines between blank lines, the author's line breaks and space-aligned
tables kept as lines; a lone upper-case line is a heading); a generated document is a
Layout already. Either is drawn by corpus.render.pdf and .docx, and rasterised, skewed,
blurred and speckled by corpus.render.scan from a seed that is the document's id. Scans
take PNG, JPEG, TIFF and an image-only PDF in turn (set order); PNG and JPEG keep page
one, as a photo of page one does.

The blind set's renderings are not committed (about 2 GB); their sha256 are, in
samples/eval/forms.sha256 (`python -m bench.accuracy --render DIR` writes and checks them):
corpus.render leaves nothing to the clock.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from corpus.render import files
from corpus.render.blocks import Block, Heading, Layout, Paragraph
from corpus.render.files import EXTENSIONS, Form, pool_map, scan_form
from corpus.render.layouts import generate
from corpus.render.text import to_text
from docq.config import REPO_ROOT

EVAL = REPO_ROOT / "samples" / "eval"
HASHES = EVAL / "forms.sha256"
FORMS = ("text", "pdf", "docx", "scan")  # text: the blind set's frozen file itself
SCAN_IMAGES = ("png", "jpeg", "tiff", "pdf")
DPI = 300
HEADING_MAX_CHARS = 60


@dataclass(frozen=True)
class Item:
    """One labelled document: its text file's name, its set, label and place in the set."""

    file: str  # e.g. "doc-type/invoice/001.txt" under samples/eval/, or "<id>.txt" generated
    set: str  # doc-type | doc-lang (the blind set's halves) | unseen
    label: str
    index: int  # its place in the set (the manifest's order): which image format its scan takes
    generated: Layout | None = None  # an unseen-template document; a blind one is its file

    @property
    def id(self) -> str:
        return self.file.removesuffix(".txt").replace("/", "-")

    @property
    def scan_image(self) -> str:
        return SCAN_IMAGES[self.index % len(SCAN_IMAGES)]

    def name(self, form: str) -> str:
        """The file name of this document in `form`, relative to a rendering folder."""
        scan = f"-scan.{EXTENSIONS[self.scan_image]}"
        ends = {"text": ".txt", "pdf": ".pdf", "docx": ".docx", "scan": scan}
        return self.file.removesuffix(".txt") + ends[form]

    def text(self) -> str:
        if self.generated is not None:
            return to_text(self.generated)
        return (EVAL / self.file).read_text(encoding="utf-8")


def items(sets: tuple[str, ...] = ("doc-type", "doc-lang")) -> list[Item]:
    """The blind set's documents in manifest order (the order is frozen with the set)."""
    manifest = json.loads((EVAL / "manifest.json").read_text(encoding="utf-8"))
    return [
        Item(f["file"], f["set"], f["label"], i)
        for i, f in enumerate(manifest["files"])
        if f["set"] in sets
    ]


def unseen(n: int, seed: int) -> list[Item]:
    """`n` documents in the generator's unseen templates (labels balanced), in seeded order."""
    return [Item(f"{d.id}.txt", "unseen", d.label, i, d) for i, d in enumerate(generate(n, seed))]


def _is_heading(line: str) -> bool:
    return len(line) <= HEADING_MAX_CHARS and line.isupper() and line == line.strip()


def layout_of(item: Item) -> Layout:
    """The text as blocks: each run of lines between blank lines one block, lines kept."""
    if item.generated is not None:
        return item.generated
    blocks: list[Block] = []
    for run in re.split(r"\n[ \t]*\n", item.text().strip("\n")):
        lines = [line.rstrip() for line in run.split("\n")]
        if len(lines) == 1 and _is_heading(lines[0]):
            blocks.append(Heading(lines[0]))
        elif any(lines):
            blocks.append(Paragraph("\n".join(lines)))
    return Layout(item.id, item.label, "blind", tuple(blocks))


def render(item: Item, form: str) -> bytes:
    """The bytes of `item` in `form` (the same bytes on every run)."""
    if form == "text":
        # The blind file's own bytes, as its author saved them.
        return item.text().encode() if item.generated else (EVAL / item.file).read_bytes()
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}; choose from {FORMS}")
    drawn = scan_form(item.scan_image, DPI) if form == "scan" else Form(form, form)
    return files.render(layout_of(item), drawn)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def frozen() -> dict[str, str]:
    """{file name: sha256} as committed in samples/eval/forms.sha256."""
    pairs = (line.split(maxsplit=1) for line in HASHES.read_text().splitlines() if line.strip())
    return {name.strip(): digest for digest, name in pairs}


def _write(out: Path, item: Item, form: str) -> tuple[str, str]:
    path = out / item.name(form)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = render(item, form)
    path.write_bytes(data)
    return item.name(form), sha256(data)


def render_all(out: Path, processes: int = 1) -> dict[str, str]:
    """Write every blind document as PDF, DOCX and scan under `out`; return {name: sha256}."""
    jobs = [(out, item, form) for item in items() for form in FORMS[1:]]
    return dict(sorted(pool_map(_write, jobs, processes)))
