"""bench/eval_forms.py: the blind set's renderings are the frozen ones (samples/eval/
forms.sha256), drawn from the author's lines, and cover every document in every form; the
generator's documents are drawn through the same path."""

from __future__ import annotations

import io
import zipfile
from collections import Counter

import docx
import pytest

from bench import eval_forms
from bench.eval_forms import Item, items, layout_of, render, sha256, unseen
from corpus.render.blocks import Heading, Paragraph
from corpus.render.docx import ZIP_DATE
from corpus.render.text import to_text


def test_the_set_is_all_there_in_manifest_order() -> None:
    every = items()
    assert Counter(i.set for i in every) == {"doc-type": 348, "doc-lang": 192}
    assert Counter(i.label for i in items(("doc-type",))) == {
        label: 58
        for label in ("invoice", "receipt", "purchase_order", "quotation", "delivery_note",
                      "contract")
    }  # fmt: skip
    assert [i.index for i in every] == list(range(len(every)))
    assert Counter(i.scan_image for i in every) == {"png": 135, "jpeg": 135, "tiff": 135,
                                                    "pdf": 135}  # fmt: skip


def test_generated_documents_take_each_scan_format_in_turn_and_their_own_text() -> None:
    docs = unseen(8, 2112)
    assert [d.scan_image for d in docs] == [*eval_forms.SCAN_IMAGES] * 2
    assert {d.set for d in docs} == {"unseen"} and eval_forms.DPI == 300
    assert docs[0].generated is not None and layout_of(docs[0]) is docs[0].generated
    assert render(docs[0], "text") == to_text(docs[0].generated).encode()
    assert docs[0].name("scan") == f"{docs[0].id}-scan.png"


def test_the_frozen_list_names_every_pdf_and_docx_and_only_the_sets_files() -> None:
    frozen = eval_forms.frozen()
    assert {n for n in frozen if not n.rsplit(".", 1)[0].endswith("-scan")} == {
        i.name(form) for i in items() for form in ("pdf", "docx")
    }
    # Scans are listed as far as they were rendered (docs/evaluation-blind.md says which).
    assert set(frozen) <= {i.name(form) for i in items() for form in ("pdf", "docx", "scan")}
    assert all(len(d) == 64 and int(d, 16) >= 0 for d in frozen.values())


def test_layout_keeps_the_authors_lines_in_order() -> None:
    item = Item("doc-type/invoice/001.txt", "doc-type", "invoice", 0)
    doc = layout_of(item)
    assert all(isinstance(b, Heading | Paragraph) for b in doc.blocks)
    drawn = [line for b in doc.blocks if isinstance(b, Heading | Paragraph)
             for line in b.text.split("\n")]  # fmt: skip
    written = [line.rstrip() for line in item.text().splitlines() if line.strip()]
    assert drawn == written
    assert Heading("INVOICE") in doc.blocks
    # a table stays as lines, its columns aligned by the author's spaces
    assert any(isinstance(b, Paragraph) and "Qty    Unit" in b.text for b in doc.blocks)


def test_docx_zip_entries_carry_the_fixed_date_not_the_clock() -> None:
    data = render(items()[1], "docx")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {m.date_time for m in archive.infolist()} == {ZIP_DATE}
    text = "\n".join(p.text for p in docx.Document(io.BytesIO(data)).paragraphs)
    assert "Vielen Dank für Ihren Einkauf!" in text


# Four documents, one of each set's first labels, as PDF and DOCX: a few seconds.
FEW = (0, 1, 200, 400)


@pytest.mark.parametrize("form", ["pdf", "docx"])
def test_pdf_and_docx_renderings_are_the_frozen_bytes(form: str) -> None:
    frozen = eval_forms.frozen()
    every = items()
    for i in FEW:
        assert sha256(render(every[i], form)) == frozen[every[i].name(form)], every[i].name(form)


# A 300 dpi page is rasterised, damaged and encoded: seconds each on a quiet core, more on a
# shared one. One scan in each file format, the image-only PDF (whose dates corpus.render
# fixes) among them.
SCANNED = (198, 207, 216, 225)


@pytest.mark.slow
def test_scans_in_every_file_format_are_the_frozen_bytes() -> None:
    frozen = eval_forms.frozen()
    every = items()
    assert {every[i].scan_image for i in SCANNED} == set(eval_forms.SCAN_IMAGES)
    for i in SCANNED:
        name = every[i].name("scan")
        assert sha256(render(every[i], "scan")) == frozen[name], name
