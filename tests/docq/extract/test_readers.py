"""The readers on honest files: PDF text layers and scans (docq/extract/pdf.py), DOCX
(docx.py), scans and photos (images.py, ocr.py). OCR runs at low dpi to keep these fast."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from docq.errors import ExtractionFailed
from docq.extract import Limits, extract
from docq.extract.base import DOCX, JPEG, PDF, PNG, TIFF
from docq.extract.ocr import available
from tests.docq.extract import samples

LIMITS = Limits(ocr_dpi=150)


def words(text: str) -> set[str]:
    return set(text.split())


def test_a_pdf_text_layer_is_read_page_by_page_in_order() -> None:
    data = samples.pdf(["Invoice INV-1001\nTotal due: 1,234.56 EUR", "Page two: terms (net 30)"])
    got = extract(data, PDF, LIMITS)
    assert got.text == "Invoice INV-1001\nTotal due: 1,234.56 EUR\n\nPage two: terms (net 30)"
    assert (got.pages, got.extraction, got.chars) == (2, "text", len(got.text))


def test_a_pdf_page_without_a_text_layer_is_ocrd_and_the_pdf_is_mixed() -> None:
    scan = samples.page_image(["Receipt number 4711", "Paid by card"])
    got = extract(samples.pdf(["Cover letter for the receipt", scan]), PDF, LIMITS)
    assert got.text.startswith("Cover letter for the receipt\n\n")
    assert {"Receipt", "4711", "Paid", "card"} <= words(got.text)
    assert (got.pages, got.extraction) == (2, "mixed")


def test_a_pdf_of_scans_only_is_ocr() -> None:
    pages = [samples.page_image([f"Scanned page {n} of the contract"]) for n in (1, 2, 3)]
    got = extract(samples.pdf(pages), PDF, Limits(ocr_dpi=150, ocr_threads=2))
    # in page order, though three pages went to two OCR threads
    assert [line for line in got.text.splitlines() if line] == [
        f"Scanned page {n} of the contract" for n in (1, 2, 3)
    ]
    assert (got.pages, got.extraction) == (3, "ocr")


def test_a_page_with_a_stray_header_below_min_page_chars_is_ocrd() -> None:
    data = samples.pdf(["p. 1"])  # 4 characters of text layer, nothing else
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, PDF, LIMITS)
    assert caught.value.code == "no_text"  # OCR'd (blank), so not the 4 characters
    assert extract(data, PDF, Limits(min_page_chars=4)).text == "p. 1"


def test_a_docx_gives_paragraphs_and_table_rows_in_document_order() -> None:
    data = samples.word(
        ["Service agreement", "between Acme and Beta"],
        [["Item", "Price"], ["Support", "100.00"]],
        ["Signed in Berlin"],
    )
    got = extract(data, DOCX, LIMITS)
    assert got.text.splitlines() == [
        "Service agreement",
        "between Acme and Beta",
        "Item\tPrice",
        "Support\t100.00",
        "Signed in Berlin",
    ]
    assert (got.pages, got.extraction) == (1, "text")


@pytest.mark.parametrize(("fmt", "content_type"), [("PNG", PNG), ("JPEG", JPEG)])
def test_a_scan_or_photo_is_ocrd(fmt: str, content_type: str) -> None:
    image = samples.page_image(["Delivery note 5521", "Handle with care"], mode="RGB")
    got = extract(samples.image_bytes(image, fmt, quality=90), content_type, LIMITS)
    assert {"Delivery", "5521", "Handle", "care"} <= words(got.text)
    assert (got.pages, got.extraction) == (1, "ocr")


def test_a_phone_photo_taken_sideways_is_turned_upright_by_its_exif_orientation() -> None:
    upright = samples.page_image(["Sideways receipt 8080"], (1240, 600))
    rotated = upright.transpose(Image.Transpose.ROTATE_90)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to view": undoes the rotation above
    got = extract(samples.image_bytes(rotated, "JPEG", exif=exif), JPEG, LIMITS)
    assert {"Sideways", "receipt", "8080"} <= words(got.text)


def test_a_multipage_tiff_counts_and_reads_every_frame() -> None:
    frames = [samples.page_image([f"Fax page {n}"], (1240, 600)) for n in (1, 2)]
    got = extract(samples.tiff_pages(frames), TIFF, LIMITS)
    assert got.pages == 2
    assert [line for line in got.text.splitlines() if line] == ["Fax page 1", "Fax page 2"]


def test_without_tesseract_data_a_scan_fails_clearly_and_a_text_pdf_still_reads(
    tmp_path: Path,
) -> None:
    nowhere = Limits(ocr_dpi=150, tessdata_dir=str(tmp_path))
    scan = samples.image_bytes(samples.page_image(["a scan"]), "PNG")
    for data, content_type in ((scan, PNG), (samples.pdf([samples.page_image(["x"])]), PDF)):
        with pytest.raises(ExtractionFailed) as caught:
            extract(data, content_type, nowhere)
        assert caught.value.code == "ocr_unavailable"
        assert "tesseract-ocr-eng" in caught.value.message
    text = "A text layer needs no OCR at all"
    assert extract(samples.pdf([text]), PDF, nowhere).text == text
    assert available(nowhere) is not None
    assert available(LIMITS) is None  # here (make system) it is installed


def test_a_long_scanned_pdf_is_not_taken_for_a_bomb() -> None:
    # 8 pages of 2.2 M pixels (150 dpi A4) inflate to 17 MB: past an 8 MB limit on other
    # streams, but each image is held to its declared size instead
    blank = Image.new("L", (1240, 1754), 255)
    data = samples.pdf([blank] * 8 + ["The last page has a text layer of its own"])
    got = extract(data, PDF, Limits(ocr_dpi=72, max_decompressed_bytes=8 << 20))
    assert (got.pages, got.extraction) == (9, "mixed")
