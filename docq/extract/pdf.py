"""PDF: the text layer through pypdfium2 (PDFium, Chrome's PDF engine), OCR where a page has none.

pypdfium2 rather than pypdf: docs/performance.md has both measured on one corpus (it reads
the text layer several times faster, and it renders pages for OCR, which pypdf cannot).
Before PDFium sees the file: the header, the end marker (a truncated download) and the
total a Flate stream inflates to (bombs.py) are checked; the page count before any page is
read. Pages whose text layer has fewer than `min_page_chars` characters are rendered at
`ocr_dpi` (fewer dpi where the page would exceed `max_pixels`) and OCR'd on a few threads
(Tesseract releases the GIL; PDFium does not allow threads, so rendering stays on this one).
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from docq.errors import ExtractionFailed
from docq.extract.base import Extracted, Limits, finish, method
from docq.extract.bombs import check_flate_streams
from docq.extract.ocr import ocr_image, tessdata

if TYPE_CHECKING:
    from PIL.Image import Image

EOF_WINDOW = 2048  # %%EOF ends the file, give or take trailing whitespace and junk
POINTS_PER_INCH = 72


def extract_pdf(data: bytes, limits: Limits, deadline: float) -> Extracted:
    """The text of every page, from the text layer or OCR, in page order."""
    if b"%%EOF" not in data[-EOF_WINDOW:]:
        raise ExtractionFailed("truncated", "the PDF has no end marker (%%EOF): cut short")
    check_flate_streams(data, limits.max_decompressed_bytes, limits.max_pixels)
    pdf = open_pdf(data)
    try:
        count = len(pdf)
        if count > limits.max_pages:
            raise ExtractionFailed("too_many_pages", f"{count} pages, more than {limits.max_pages}")
        if count == 0:
            raise ExtractionFailed("no_text", "the PDF has no pages")
        texts = read_pages(pdf, count, limits, deadline)
    finally:
        pdf.close()
    ocr_pages = sum(1 for _, ocr in texts if ocr)
    body = "\n\n".join(text.strip() for text, _ in texts)
    return finish(body, count, method(ocr_pages, count), limits)


def open_pdf(data: bytes) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if exc.err_code == pdfium_c.FPDF_ERR_PASSWORD:
            raise ExtractionFailed("encrypted", "the PDF needs a password") from None
        if exc.err_code == pdfium_c.FPDF_ERR_SECURITY:
            raise ExtractionFailed("encrypted", "the PDF's encryption is not supported") from None
        raise ExtractionFailed("unreadable", f"PDFium cannot open the PDF: {exc}") from None


def read_pages(
    pdf: pdfium.PdfDocument, count: int, limits: Limits, deadline: float
) -> list[tuple[str, bool]]:
    """(text, OCR'd?) per page; the text-layer pages here, the others on OCR threads."""
    results: list[str | Future[str]] = []
    with ThreadPoolExecutor(max_workers=limits.ocr_threads) as pool:
        try:
            for index in range(count):
                if time.monotonic() > deadline:
                    raise ExtractionFailed("timeout", f"still reading page {index + 1} of {count}")
                page = pdf[index]
                try:
                    text = page_text(page)
                    if len(text.strip()) >= limits.min_page_chars:
                        results.append(text)
                        continue
                    tessdata(limits)  # no OCR here: say so before rendering anything
                    image = render(page, limits)
                finally:
                    page.close()
                results.append(pool.submit(ocr_image, image, limits))
                # bound the rendered pages waiting for a thread (each is ~9 MB at 300 dpi)
                pending = [r for r in results if isinstance(r, Future) and not r.done()]
                if len(pending) > 2 * limits.ocr_threads:
                    pending[0].result(timeout=max(0.0, deadline - time.monotonic()))
            return [
                (r.result(timeout=max(0.0, deadline - time.monotonic())), True)
                if isinstance(r, Future)
                else (r, False)
                for r in results
            ]
        except TimeoutError:
            raise ExtractionFailed("timeout", "OCR of the pages took too long") from None
        finally:
            for r in results:
                if isinstance(r, Future):
                    r.cancel()


def page_text(page: pdfium.PdfPage) -> str:
    textpage = page.get_textpage()
    try:
        return str(textpage.get_text_bounded()).replace("\r\n", "\n").replace("\r", "\n")
    finally:
        textpage.close()


def render(page: pdfium.PdfPage, limits: Limits) -> Image:
    """The page as a grey image at ocr_dpi, or at fewer dpi where that exceeds max_pixels."""
    width, height = page.get_size()  # points
    scale = limits.ocr_dpi / POINTS_PER_INCH
    if width <= 0 or height <= 0:
        raise ExtractionFailed("unreadable", f"a page is {width} x {height} points")
    if width * height * scale * scale > limits.max_pixels:
        scale = (limits.max_pixels / (width * height)) ** 0.5
    bitmap = page.render(scale=scale, grayscale=True)
    try:
        return bitmap.to_pil().copy()  # the copy owns its pixels: the bitmap is freed now
    finally:
        bitmap.close()
