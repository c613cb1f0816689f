"""OCR of page images through Tesseract (Debian's tesseract-ocr-eng language data).

tesserocr, not pytesseract: it calls libtesseract in this process (its wheel carries the
library; only the language data comes from Debian), so a page costs no fork + exec + PNG
round trip through a temporary file, and one engine (~80 ms to load) serves every page of
a process (both measured: docs/performance.md). Isolation from a misbehaving page is
docq.extract.isolation's job, not a subprocess per page.

Where no language data is installed (the GPU device: Tesseract is a Debian package), OCR is
unavailable and says so: `ExtractionFailed("ocr_unavailable")`, never a crash.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from docq.errors import ExtractionFailed
from docq.extract.base import Limits

if TYPE_CHECKING:
    from PIL.Image import Image

# Where Debian's (and a source build's) tesseract-ocr-<lang> packages put their data.
TESSDATA_PLACES = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
    "/usr/local/share/tessdata",
)

_engines: dict[tuple[str, str], list[object]] = {}  # idle engines, per (tessdata, language)
_lock = threading.Lock()


def tessdata(limits: Limits) -> str:
    """The folder holding every language of limits.ocr_language, or "ocr_unavailable"."""
    places = (limits.tessdata_dir,) if limits.tessdata_dir else TESSDATA_PLACES
    langs = limits.ocr_language.split("+")
    for place in places:
        if all((Path(place) / f"{lang}.traineddata").is_file() for lang in langs):
            return place
    raise ExtractionFailed(
        "ocr_unavailable",
        f"OCR is not available here: no Tesseract data for {limits.ocr_language!r} in "
        f"{', '.join(places)} (install Debian's tesseract-ocr-{langs[0]}: make system)",
    )


def available(limits: Limits) -> str | None:
    """Why OCR cannot run here (for a worker's start-up message), or None when it can."""
    try:
        tessdata(limits)
        import tesserocr  # noqa: F401  (the binding's wheel is there)
    except ExtractionFailed as exc:
        return exc.message
    except ImportError as exc:
        return f"OCR is not available here: {exc}"
    return None


@contextmanager
def engine(limits: Limits) -> Iterator[object]:
    """A Tesseract engine for limits' language, reused across pages (one per thread at once)."""
    key = (tessdata(limits), limits.ocr_language)
    with _lock:
        idle = _engines.setdefault(key, [])
        api = idle.pop() if idle else None
    if api is None:
        try:
            import tesserocr
        except ImportError as exc:
            raise ExtractionFailed("ocr_unavailable", f"OCR is not available here: {exc}") from exc
        try:
            api = tesserocr.PyTessBaseAPI(path=key[0] + "/", lang=key[1])
        except RuntimeError as exc:
            raise ExtractionFailed("ocr_unavailable", f"Tesseract did not start: {exc}") from exc
    try:
        yield api
    finally:
        with _lock:
            _engines[key].append(api)


def ocr_image(image: Image, limits: Limits) -> str:
    """The text Tesseract reads on one page image."""
    with engine(limits) as api:
        api.SetImage(image)  # type: ignore[attr-defined]
        text: str = api.GetUTF8Text()  # type: ignore[attr-defined]
        api.Clear()  # type: ignore[attr-defined]  # drop the page's image and results
    return text
