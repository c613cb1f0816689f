"""The blind evaluation set (samples/eval/, issue 38) in the forms users send: each frozen
text as a PDF with a text layer, as a DOCX and as a page scanned at 300 dpi.

    python -m bench.eval_forms render --out DIR [--processes 2]   write every rendering
    python -m bench.eval_forms check --out DIR                    each against forms.sha256
    python -m bench.eval_forms hashes --out DIR                   rewrite forms.sha256

The drawing is the project's own (corpus.render): each text becomes a Layout of blocks
(one per run of lines between blank lines, the author's line breaks and space-aligned
tables kept as lines; a lone upper-case line is a heading), drawn by corpus.render.pdf and
corpus.render.docx, and rasterised, skewed, blurred and speckled by corpus.render.scan
from a seed that is the document's id. Scans take PNG, JPEG, TIFF and an image-only PDF
in turn (manifest order), as bench/accuracy_files.py does; PNG and JPEG keep page one, as
a photo of page one does.

The renderings are not committed (tens of MB); their sha256 are, in
samples/eval/forms.sha256 (`sha256sum -c` reads it from DIR), and a test re-renders a few
and compares. What corpus.render leaves to the clock is fixed here: the DOCX's zip entry
dates, and the dates Pillow writes into an image-only PDF.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import io
import json
import re
import time
import zipfile
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from corpus.render.blocks import Block, Heading, Layout, Paragraph
from corpus.render.docx import to_docx
from corpus.render.files import EXTENSIONS
from corpus.render.pdf import to_pdf
from corpus.render.scan import encode, scan
from docq.config import REPO_ROOT

EVAL = REPO_ROOT / "samples" / "eval"
HASHES = EVAL / "forms.sha256"
FORMS = ("text", "pdf", "docx", "scan")  # text: the frozen file itself
SCAN_IMAGES = ("png", "jpeg", "tiff", "pdf")
DPI = 300
# What the renderers would otherwise take from the clock: one date, the set's.
FIXED_DATE = dt.datetime(2026, 12, 5, tzinfo=dt.UTC)
ZIP_DATE = (2026, 12, 5, 0, 0, 0)
HEADING_MAX_CHARS = 60


@dataclass(frozen=True)
class Item:
    """One blind document: its file under samples/eval/, its set, label and manifest place."""

    file: str  # e.g. "doc-type/invoice/001.txt"
    set: str  # doc-type | doc-lang
    label: str
    index: int  # its place in the manifest: which image format its scan takes

    @property
    def id(self) -> str:
        return self.file.removesuffix(".txt").replace("/", "-")

    @property
    def scan_image(self) -> str:
        return SCAN_IMAGES[self.index % len(SCAN_IMAGES)]

    def name(self, form: str) -> str:
        """The file name of this document in `form`, relative to a rendering folder."""
        stem = self.file.removesuffix(".txt")
        if form == "text":
            return self.file
        if form in ("pdf", "docx"):
            return f"{stem}.{form}"
        if form == "scan":
            return f"{stem}-scan.{EXTENSIONS[self.scan_image]}"
        raise ValueError(f"unknown form {form!r}; choose from {FORMS}")

    def text(self) -> str:
        return (EVAL / self.file).read_text(encoding="utf-8")


def items(sets: tuple[str, ...] = ("doc-type", "doc-lang")) -> list[Item]:
    """The set's documents in manifest order (the order is frozen with the set)."""
    manifest = json.loads((EVAL / "manifest.json").read_text(encoding="utf-8"))
    return [
        Item(f["file"], f["set"], f["label"], i)
        for i, f in enumerate(manifest["files"])
        if f["set"] in sets
    ]


def _is_heading(line: str) -> bool:
    return len(line) <= HEADING_MAX_CHARS and line.isupper() and line == line.strip()


def layout_of(item: Item) -> Layout:
    """The text as blocks: each run of lines between blank lines one block, lines kept."""
    blocks: list[Block] = []
    for run in re.split(r"\n[ \t]*\n", item.text().strip("\n")):
        lines = [line.rstrip() for line in run.split("\n")]
        if len(lines) == 1 and _is_heading(lines[0]):
            blocks.append(Heading(lines[0]))
        elif any(lines):
            blocks.append(Paragraph("\n".join(lines)))
    return Layout(item.id, item.label, "blind", tuple(blocks))


def _fixed_zip(data: bytes) -> bytes:
    """The same zip with every entry dated ZIP_DATE (python-docx dates them now)."""
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


def _scanned(doc: Layout, image: str) -> bytes:
    pages = scan(to_pdf(doc), doc.id, DPI)
    if image != "pdf":
        return encode(pages, image, DPI)
    # corpus.render.scan.encode's PDF, with the dates Pillow would take from the clock fixed.
    out = io.BytesIO()
    stamp = FIXED_DATE.timetuple()
    pages[0].save(out, "PDF", resolution=float(DPI), save_all=True, append_images=pages[1:],
                  title=doc.id, creationDate=stamp, modDate=stamp)  # fmt: skip
    return out.getvalue()


def render(item: Item, form: str) -> bytes:
    """The bytes of `item` in `form` (the same bytes on every run)."""
    if form == "text":
        return (EVAL / item.file).read_bytes()
    doc = layout_of(item)
    if form == "pdf":
        return to_pdf(doc)
    if form == "docx":
        return _fixed_zip(to_docx(doc))
    if form == "scan":
        return _scanned(doc, item.scan_image)
    raise ValueError(f"unknown form {form!r}; choose from {FORMS}")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def frozen() -> dict[str, str]:
    """{file name: sha256} as committed in samples/eval/forms.sha256 (empty before it is)."""
    if not HASHES.is_file():
        return {}
    pairs = (line.split(maxsplit=1) for line in HASHES.read_text().splitlines() if line.strip())
    return {name.strip(): digest for digest, name in pairs}


def _write(out: Path, item: Item, form: str) -> tuple[str, str]:
    path = out / item.name(form)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = render(item, form)
    path.write_bytes(data)
    return item.name(form), sha256(data)


def render_all(out: Path, processes: int = 1, forms: tuple[str, ...] = FORMS[1:]) -> dict[str, str]:
    """Write every document of the set in each of `forms` under `out`; return {name: sha256}."""
    jobs = [(out, item, form) for item in items() for form in forms]
    if processes > 1:
        with ProcessPoolExecutor(processes) as pool:
            done = list(pool.map(_write, *zip(*jobs, strict=True), chunksize=4))
    else:
        done = [_write(*job) for job in jobs]
    return dict(sorted(done))


def write_hashes(digests: dict[str, str]) -> None:
    HASHES.write_text("".join(f"{d}  {n}\n" for n, d in sorted(digests.items())))


def check(out: Path) -> list[str]:
    """The files under `out` whose bytes differ from forms.sha256 (missing ones included)."""
    wrong = []
    for name, digest in frozen().items():
        path = out / name
        if not path.is_file() or sha256(path.read_bytes()) != digest:
            wrong.append(name)
    return wrong


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_forms",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("command", choices=("render", "check", "hashes"))
    parser.add_argument("--out", type=Path, required=True, help="the rendering folder")
    parser.add_argument("--processes", type=int, default=1, help="render in this many")
    args = parser.parse_args(argv)
    if args.command == "check":
        wrong = check(args.out)
        print(f"{len(frozen()) - len(wrong)} of {len(frozen())} files match forms.sha256")
        for name in wrong:
            print(f"  differs or missing: {name}")
        raise SystemExit(1 if wrong else 0)
    start = time.perf_counter()
    digests = render_all(args.out, args.processes)
    print(f"rendered {len(digests)} files into {args.out} in {time.perf_counter() - start:.0f} s")
    if args.command == "hashes":
        write_hashes(digests)
        print(f"wrote {HASHES}")
    elif wrong := check(args.out):
        print(f"{len(wrong)} files differ from {HASHES}: {wrong[:5]}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
