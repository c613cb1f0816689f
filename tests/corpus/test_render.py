"""corpus/render: unseen-template documents drawn as text, PDF, scans, DOCX and HTML, and
the committed samples/files/ they regenerate."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import docx
import numpy as np
import pypdfium2 as pdfium
import pytest
from PIL import Image

from corpus.doc_type import LABELS
from corpus.render import files
from corpus.render.__main__ import main
from corpus.render.blocks import Grid, Title
from corpus.render.docx import to_docx
from corpus.render.layouts import generate, layout
from corpus.render.pdf import to_pdf
from corpus.render.scan import FORMATS, encode, rasterise, scan, scanner
from corpus.render.text import to_html, to_text
from docq.extract import sniff

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "files"
SNIFFED = {"png": "image/png", "jpeg": "image/jpeg", "tiff": "image/tiff",
           "pdf": "application/pdf"}  # fmt: skip


def pdf_text(data: bytes) -> str:
    document = pdfium.PdfDocument(data)
    try:
        return "\n".join(document[i].get_textpage().get_text_range() for i in range(len(document)))
    finally:
        document.close()


def grid_cells(doc_blocks: tuple[object, ...]) -> list[str]:
    return [c for b in doc_blocks if isinstance(b, Grid) for row in b.rows for c in row]


def test_same_seed_same_documents_other_seed_others() -> None:
    assert generate(12, 5) == generate(12, 5)
    assert not {to_text(d) for d in generate(12, 5)} & {to_text(d) for d in generate(12, 6)}


def test_labels_are_balanced_and_every_class_has_a_template() -> None:
    counts = Counter(d.label for d in generate(61, 3))
    assert set(counts) == set(LABELS)
    assert max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.parametrize("label", LABELS)
def test_text_form_rules_its_grids_and_ends_with_the_footer(label: str) -> None:
    doc = layout(9, 1, label)
    text = to_text(doc)
    ruled = any(line.startswith("+--") for line in text.splitlines())
    assert ruled == any(isinstance(b, Grid) for b in doc.blocks) == (label != "contract")
    assert all(cell in text for cell in grid_cells(doc.blocks))
    if doc.footer:
        assert text.rstrip().endswith(doc.footer[-1])


@pytest.mark.parametrize("label", LABELS)
def test_pdf_has_a_text_layer_with_the_documents_words_and_embeds_its_font(label: str) -> None:
    doc = layout(9, 2, label)
    data = to_pdf(doc)
    text = pdf_text(data)
    title = next(b.text for b in doc.blocks if isinstance(b, Title))
    assert title in text
    assert all(cell in text for cell in grid_cells(doc.blocks))
    assert all(line in text for line in doc.footer)
    assert b"/FontFile2" in data  # the TrueType font travels inside the file


def test_a_scan_is_a4_at_300_dpi_skewed_noisy_and_has_no_text_layer() -> None:
    doc = layout(9, 3, "invoice")
    pdf = to_pdf(doc)
    clean = rasterise(pdf, 300)[0]
    assert abs(clean.width - 2480) <= 1 and abs(clean.height - 3508) <= 1
    page = scan(pdf, doc.id, 300)[0]
    assert page.size == clean.size and page.mode == "L"
    assert 0.5 <= abs(scanner(doc.id).skew_degrees) <= 2.0
    # Noise and skew move most pixels away from the clean page's values.
    assert np.mean(np.asarray(page) != np.asarray(clean)) > 0.5
    image_pdf = encode([page], "pdf", 300)
    assert pdf_text(image_pdf).strip() == ""
    assert pdf_text(pdf).strip() != ""


def test_the_same_seed_scans_the_same_pixels_and_another_seed_others() -> None:
    pdf = to_pdf(layout(9, 4, "receipt"))
    a, b, c = (np.asarray(scan(pdf, seed, 100)[0]) for seed in ("s1", "s1", "s2"))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_the_page_is_turned_by_the_scanners_skew() -> None:
    pdf = to_pdf(layout(9, 8, "invoice"))
    clean, page = rasterise(pdf, 100)[0], scan(pdf, "skew", 100)[0]
    skew = scanner("skew").skew_degrees
    scanned = np.asarray(page, dtype=np.float32)

    def distance(degrees: float) -> float:
        turned = clean.rotate(degrees, fillcolor=255)
        return float(np.abs(np.asarray(turned, dtype=np.float32) - scanned).mean())

    # The scan lies closer to the clean page turned by its skew than unturned or turned back.
    assert distance(skew) < distance(0.0) and distance(skew) < distance(-skew)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("bilevel", [False, True])
def test_each_scan_format_is_the_file_type_docq_sniffs_and_keeps_its_dpi(
    fmt: str, bilevel: bool
) -> None:
    pages = scan(to_pdf(layout(9, 5, "contract")), "fmt", 100)
    data = encode(pages, fmt, 100, bilevel)
    assert sniff(data) == SNIFFED[fmt]
    if fmt != "pdf":
        with Image.open(io.BytesIO(data)) as image:
            assert round(image.info["dpi"][0]) == 100
            # JPEG has no 1-bit mode: a black-and-white JPEG is greyscale
            assert image.mode == ("1" if bilevel and fmt != "jpeg" else "L")


def test_docx_holds_paragraphs_a_ruled_table_and_the_footer() -> None:
    doc = layout(9, 6, "purchase_order")
    word = docx.Document(io.BytesIO(to_docx(doc)))
    paragraphs = "\n".join(p.text for p in word.paragraphs)
    cells = {c.text for t in word.tables for row in t.rows for c in row.cells}
    assert next(b.text for b in doc.blocks if isinstance(b, Title)) in paragraphs
    assert set(grid_cells(doc.blocks)) <= cells
    assert any(t.style is not None and t.style.name == "Table Grid" for t in word.tables)
    assert doc.footer[0] in word.sections[0].footer.paragraphs[0].text


def test_html_form_is_a_page_with_the_grid_as_a_table() -> None:
    doc = layout(9, 7, "quotation")
    page = to_html(doc)
    assert page.startswith("<!DOCTYPE html>") and "<table" in page
    assert sniff(page.encode()) == "text/html"
    assert all(c.replace('"', "&quot;").replace("'", "&#x27;") in page
               for c in grid_cells(doc.blocks))  # fmt: skip


def test_samples_regenerate_with_the_same_files_labels_and_types(tmp_path: Path) -> None:
    committed = json.loads((SAMPLES / "labels.json").read_text())
    regenerated = files.samples(tmp_path)
    assert regenerated == committed
    assert {"pdf", "png", "jpg", "tiff", "docx", "html"} <= {n.rsplit(".", 1)[1] for n in committed}
    for name in committed:
        old, new = (SAMPLES / name).read_bytes(), (tmp_path / name).read_bytes()
        assert sniff(old) == sniff(new), name
        assert len(old) < 300_000, f"{name} is {len(old)} bytes"
    assert sum((SAMPLES / n).stat().st_size for n in committed) < 2_000_000


def test_cli_writes_n_scanned_pages_with_their_labels(tmp_path: Path) -> None:
    main(["scans", "--n", "3", "--dpi", "100", "--format", "png", "--out", str(tmp_path)])
    labels = json.loads((tmp_path / "labels.json").read_text())
    assert len(labels) == 3 and set(labels.values()) <= set(LABELS)
    for name in labels:
        with Image.open(tmp_path / name) as image:
            assert round(image.info["dpi"][0]) == 100
            # A4 at 100 dpi, or a receipt's 80 mm roll
            assert min(abs(image.width - 827), abs(image.width - 315)) <= 1, image.size


def test_scans_rendered_in_processes_are_the_same_files(tmp_path: Path) -> None:
    form = files.scan_form("tiff", 60)
    one = files.scans(tmp_path / "one", 3, 4, form)
    two = files.scans(tmp_path / "two", 3, 4, form, processes=2)
    assert one == two
    for name in one:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
