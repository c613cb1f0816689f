"""What reading uploaded files costs (issue 21): PDF text layers with pypdfium2 against pypdf,
OCR of 300 dpi A4 scans with tesserocr against pytesseract, and extract_isolated's per-call
cost against extract() in the calling process and against a fresh child per document.

    .venv/bin/python -m bench.extract --out bench/extract-2026-12-02.json
    OMP_THREAD_LIMIT=1 .venv/bin/python -m bench.extract --ocr-pages 6 \
        --out bench/extract-2026-12-02-omp1.json

Debian's tesseract program (pytesseract's) is built with OpenMP: its idle threads spin, so
its CPU seconds, and so its per-core rate, look 5x worse than they are unless
OMP_THREAD_LIMIT=1 holds it to one thread (the second run: the fair per-core comparison).

Rates are per core: pages over the CPU seconds spent (this process's, plus its children's
for pytesseract, which runs the tesseract program), so a library that uses more threads is
not flattered; wall-clock rates are in the JSON beside them. A page is "correct" when the
reader's words are the words written on it (OCR: the share of words read right).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import resource
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench import extract_corpus as corpus
from docq.extract import Limits, extract
from docq.extract.base import PDF, PNG, TEXT
from docq.extract.isolation import ExtractorPool
from docq.extract.ocr import TESSDATA_PLACES


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(work: Callable[[], list[str]]) -> tuple[list[str], float, float]:
    """work's page texts, its CPU seconds and its wall seconds."""
    cpu0, wall0 = cpu(), time.perf_counter()
    texts = work()
    return texts, cpu() - cpu0, time.perf_counter() - wall0


def row(
    name: str, pages: list[list[str]], run: tuple[list[str], float, float], repeat: int = 1
) -> dict[str, object]:
    """One reader's figures: `repeat` reads of `pages`, the texts of the last compared."""
    texts, cpu_s, wall_s = run
    right = sum(
        1 for lines, text in zip(pages, texts, strict=True) if corpus.words(lines) == text.split()
    )
    read = len(pages) * repeat
    return {
        "reader": name, "pages_read": read, "correct_pages": f"{right}/{len(pages)}",
        "cpu_s": round(cpu_s, 3), "wall_s": round(wall_s, 3),
        "pages_per_core_s": round(read / cpu_s, 1), "pages_per_s": round(read / wall_s, 1),
    }  # fmt: skip


def word_share(pages: list[list[str]], texts: list[str]) -> float:
    """Of the words written, the share OCR read (as a multiset: order and layout aside)."""
    from collections import Counter

    written = Counter(w for lines in pages for w in corpus.words(lines))
    read = Counter(w for text in texts for w in text.split())
    return round(sum((written & read).values()) / sum(written.values()), 4)


def pdf_readers(pages: list[list[str]], repeat: int) -> list[dict[str, object]]:
    import pypdf
    import pypdfium2 as pdfium

    data = corpus.text_pdf(pages)

    def with_pdfium() -> list[str]:
        texts: list[str] = []
        for _ in range(repeat):
            pdf = pdfium.PdfDocument(data)
            texts = []
            for page in pdf:
                textpage = page.get_textpage()
                texts.append(textpage.get_text_bounded())
                textpage.close()
                page.close()
            pdf.close()
        return texts

    def with_pypdf() -> list[str]:
        texts: list[str] = []
        for _ in range(repeat):
            texts = [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]
        return texts

    def with_docq() -> list[str]:  # pypdfium2 behind docq's checks (end marker, bombs, limits)
        text = ""
        for _ in range(repeat):
            text = extract(data, PDF, Limits()).text
        return text.split("\n\n")

    readers = (("pypdfium2", with_pdfium), ("pypdf", with_pypdf), ("docq extract()", with_docq))
    return [row(name, pages, timed(work), repeat) for name, work in readers]


def ocr_readers(pages: list[list[str]]) -> list[dict[str, object]]:
    import pytesseract
    import tesserocr

    images = [corpus.scan(lines) for lines in pages]
    place = next(p for p in TESSDATA_PLACES if Path(p, "eng.traineddata").is_file())
    with tesserocr.PyTessBaseAPI(path=place + "/", lang="eng") as api:

        def with_tesserocr() -> list[str]:
            texts = []
            for image in images:
                api.SetImage(image)
                texts.append(api.GetUTF8Text())
            return texts

        runs = {"tesserocr (in process)": timed(with_tesserocr)}
    runs["pytesseract (a tesseract per page)"] = timed(
        lambda: [pytesseract.image_to_string(image, lang="eng") for image in images]
    )
    pngs = [corpus.png(image) for image in images]
    runs["docq extract() of a PNG scan"] = timed(
        lambda: [extract(d, PNG, Limits()).text for d in pngs]
    )
    rows = []
    for name, run in runs.items():
        result = row(name, pages, run)
        del result["correct_pages"]  # OCR misreads a word or two on most pages: count words
        result["words_read_share"] = word_share(pages, run[0])
        rows.append(result)
    return rows


def isolation(calls: int) -> list[dict[str, object]]:
    """Seconds per call of a small text document: in process, warm child, fresh child."""
    limits, doc = Limits(), b"Invoice 42: total 10.00 EUR"
    pool = ExtractorPool(1)
    pool.extract(doc, TEXT, limits)  # the forkserver and the child start before timing
    rows = []
    for name, call, n in (
        ("extract() in process", lambda: extract(doc, TEXT, limits), calls),
        ("extract_isolated, warm child", lambda: pool.extract(doc, TEXT, limits), calls),
        ("a fresh child per document", lambda: _fresh(doc, limits), max(1, calls // 50)),
    ):
        start = time.perf_counter()
        for _ in range(n):
            call()
        rows.append(
            {
                "way": name,
                "calls": n,
                "ms_per_call": round((time.perf_counter() - start) / n * 1e3, 3),
            }
        )
    pool.close()
    return rows


def _fresh(doc: bytes, limits: Limits) -> None:
    pool = ExtractorPool(1)
    pool.extract(doc, TEXT, limits)
    pool.close()


def report(result: dict[str, list[dict[str, object]]]) -> None:
    console = Console(width=150)
    for title, rows in result.items():
        table = Table(title=title)
        for key in rows[0]:
            table.add_column(key, justify="left" if isinstance(rows[0][key], str) else "right")
        for r in rows:
            table.add_row(*(str(v) for v in r.values()))
        console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--docs", type=int, default=40, help="corpus documents laid out as PDF pages"
    )
    parser.add_argument("--repeat", type=int, default=5, help="reads of the whole PDF per library")
    parser.add_argument("--ocr-pages", type=int, default=4, help="300 dpi A4 scans to OCR")
    parser.add_argument("--calls", type=int, default=500, help="extract_isolated calls timed")
    parser.add_argument("--out", type=Path, help="write the raw figures as JSON here")
    args = parser.parse_args()
    pages = corpus.pages(args.docs)
    result = {
        "PDF text layer (pages per CPU second)": pdf_readers(pages, args.repeat),
        "OCR, 300 dpi A4 scans (pages per CPU second)": ocr_readers(pages[: args.ocr_pages]),
        "extract_isolated per call (a small text document)": isolation(args.calls),
    }
    report(result)
    if args.out:
        meta = {
            "machine": platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "args": {k: str(v) for k, v in vars(args).items()},
        }
        args.out.write_text(json.dumps({"meta": meta, **result}, indent=1) + "\n")


if __name__ == "__main__":
    main()
