"""Rendered documents as files with their true labels: `samples/files/` and batches of
scanned pages for the OCR and GPU benches.

Each written folder has `labels.json`, `{file name: label}`, beside the files.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from corpus.render.blocks import Layout
from corpus.render.docx import to_docx
from corpus.render.layouts import generate, layout
from corpus.render.pdf import to_pdf
from corpus.render.scan import encode, scan
from corpus.render.text import to_html, to_text

SAMPLES_SEED = 21
EXTENSIONS = {"png": "png", "jpeg": "jpg", "tiff": "tiff", "pdf": "pdf"}
T = TypeVar("T")


@dataclass(frozen=True)
class Form:
    """How a document is written to a file: its form and, for a scan, how it is scanned."""

    name: str  # text | html | pdf | docx | scan
    extension: str
    dpi: int = 300
    image: str = "png"  # a scan's file format (corpus.render.scan.FORMATS)
    bilevel: bool = False


def render(doc: Layout, form: Form) -> bytes:
    """The bytes of `doc` written in `form`."""
    if form.name == "text":
        return to_text(doc).encode()
    if form.name == "html":
        return to_html(doc).encode()
    if form.name == "pdf":
        return to_pdf(doc)
    if form.name == "docx":
        return to_docx(doc)
    if form.name == "scan":
        pages = scan(to_pdf(doc), doc.id, form.dpi)
        return encode(pages, form.image, form.dpi, form.bilevel, title=doc.id)
    raise ValueError(f"unknown form {form.name!r}")


def scan_form(image: str, dpi: int = 300, bilevel: bool = False) -> Form:
    """A scan saved as `image` (png, jpeg, tiff or pdf)."""
    return Form("scan", EXTENSIONS[image], dpi, image, bilevel)


# samples/files/: (file stem, label, form). Each under ~300 KB: the scans that keep their
# grey levels are at 150-200 dpi (a phone photo), the 300 dpi ones black and white.
SAMPLES: tuple[tuple[str, str, Form], ...] = (
    ("invoice-1", "invoice", Form("pdf", "pdf")),
    ("purchase-order-1", "purchase_order", Form("pdf", "pdf")),
    ("scan-delivery-note-1", "delivery_note", scan_form("png", 300, bilevel=True)),
    ("scan-receipt-1", "receipt", scan_form("jpeg", 200)),
    ("scan-quotation-1", "quotation", scan_form("pdf", 300, bilevel=True)),
    ("scan-invoice-2", "invoice", scan_form("tiff", 300, bilevel=True)),
    ("contract-1", "contract", Form("docx", "docx")),
    ("quotation-2", "quotation", Form("docx", "docx")),
    ("invoice-3", "invoice", Form("html", "html")),
)


def pool_map(fn: Callable[..., T], jobs: list[tuple[Any, ...]], processes: int) -> list[T]:
    """`fn` over `jobs` in order, in `processes` processes where more than one."""
    if processes <= 1:
        return [fn(*job) for job in jobs]
    with ProcessPoolExecutor(processes) as pool:
        return list(pool.map(fn, *zip(*jobs, strict=True), chunksize=2))


def _write_one(out: Path, stem: str, doc: Layout, form: Form) -> tuple[str, str]:
    name = f"{stem}.{form.extension}"
    (out / name).write_bytes(render(doc, form))
    return name, doc.label


def write(out: Path, named: list[tuple[str, Layout, Form]], processes: int = 1) -> dict[str, str]:
    """Write each document as `<stem>.<extension>` and `labels.json`; return the labels.
    `processes` > 1 renders in that many processes (a 300 dpi page takes about a second)."""
    out.mkdir(parents=True, exist_ok=True)
    labels = dict(pool_map(_write_one, [(out, *x) for x in named], processes))
    (out / "labels.json").write_text(json.dumps(labels, indent=2) + "\n", encoding="utf-8")
    return labels


def samples(out: Path, seed: int = SAMPLES_SEED) -> dict[str, str]:
    """The sample files of the README's walk-through (SAMPLES), into `out`."""
    return write(out, [(stem, layout(seed, n, label), form)
                       for n, (stem, label, form) in enumerate(SAMPLES)])  # fmt: skip


def scans(out: Path, n: int, seed: int, form: Form, processes: int = 1) -> dict[str, str]:
    """`n` scanned documents (labels balanced) in `form`, named by document id: as PNG or
    JPEG, `n` pages (a photo keeps page one), as TIFF or PDF every page of each."""
    return write(out, [(doc.id, doc, form) for doc in generate(n, seed)], processes)
