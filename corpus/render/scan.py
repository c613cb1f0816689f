"""A PDF page turned into what a scanner or a phone returns: rasterised at a resolution,
skewed by 0.5-2 degrees, blurred, speckled and JPEG-compressed, with no text layer.

The page image is saved as PNG, JPEG or TIFF (a multi-page TIFF keeps every page; PNG and
JPEG keep the first, as a photo of page one does), or as a PDF of images only, so the
text must be read back by OCR. Everything a page suffers follows from a seed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import random
from dataclasses import dataclass

import numpy as np
import pypdfium2 as pdfium
from PIL import Image, ImageFilter

FORMATS = ("png", "jpeg", "tiff", "pdf")
# The creation and modification dates of an image-only PDF, which Pillow would take from
# the clock: the day the blind set's renderings were frozen (samples/eval/forms.sha256).
PDF_DATE = dt.datetime(2026, 12, 5, tzinfo=dt.UTC).timetuple()


@dataclass(frozen=True)
class Damage:
    """What one scan does to a page; `scanner(seed)` draws one."""

    skew_degrees: float  # signed: pages go in either way round
    blur_radius: float  # in pixels at 300 dpi, scaled to the resolution
    noise_sigma: float  # grey levels of sensor noise
    specks: float  # share of pixels turned to dust (black) or dropout (white)
    jpeg_quality: int  # the scanner's own compression, before any file format
    paper: int  # grey level of the paper (255 is white)


def scanner(seed: str) -> Damage:
    """The damage of one scan, drawn from `seed` (the same seed, the same damage)."""
    rng = random.Random(f"docq-scan:{seed}")
    return Damage(
        skew_degrees=rng.choice((-1, 1)) * rng.uniform(0.5, 2.0),
        blur_radius=rng.uniform(0.3, 0.9),
        noise_sigma=rng.uniform(4.0, 12.0),
        specks=rng.uniform(0.0002, 0.001),
        jpeg_quality=rng.randint(35, 70),
        paper=rng.randint(228, 250),
    )


def _numpy_rng(seed: str) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8]))


def damage_page(page: Image.Image, damage: Damage, dpi: int, seed: str) -> Image.Image:
    """One clean greyscale page image, scanned: skew, blur, noise, specks, JPEG artefacts."""
    # Paper tone and ink that is not quite black: the contrast a real scan has.
    img = page.point(lambda v: 30 + v * (damage.paper - 30) // 255)
    img = img.rotate(damage.skew_degrees, resample=Image.Resampling.BICUBIC, fillcolor=damage.paper)
    img = img.filter(ImageFilter.GaussianBlur(damage.blur_radius * dpi / 300))
    rng = _numpy_rng(seed)
    pixels = np.asarray(img, dtype=np.float32)
    pixels += rng.normal(0.0, damage.noise_sigma, pixels.shape).astype(np.float32)
    specks = rng.random(pixels.shape, dtype=np.float32)
    pixels[specks < damage.specks / 2] = 20.0
    pixels[specks > 1 - damage.specks / 2] = 255.0
    img = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8), mode="L")
    buffer = io.BytesIO()
    img.save(buffer, "JPEG", quality=damage.jpeg_quality)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


def rasterise(pdf: bytes, dpi: int) -> list[Image.Image]:
    """Every page of a PDF as a clean greyscale image at `dpi` (A4 at 300 dpi: 2480 x 3508)."""
    document = pdfium.PdfDocument(pdf)
    try:
        return [
            document[i].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
            for i in range(len(document))
        ]
    finally:
        document.close()


def scan(pdf: bytes, seed: str, dpi: int = 300) -> list[Image.Image]:
    """The pages of `pdf` as scanned by one scanner drawn from `seed`."""
    damage = scanner(seed)
    return [
        damage_page(page, damage, dpi, f"{seed}:{n}") for n, page in enumerate(rasterise(pdf, dpi))
    ]


def encode(
    pages: list[Image.Image], fmt: str, dpi: int, bilevel: bool = False, title: str = ""
) -> bytes:
    """Scanned pages as a file of `fmt` (FORMATS); `bilevel` thresholds them to black and
    white first, as fax-mode and document scanners do (small files, harder OCR); `title`
    is a PDF's."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    if bilevel:
        pages = [p.point(lambda v: 255 if v > 150 else 0).convert("1") for p in pages]
    out = io.BytesIO()
    first, rest = pages[0], pages[1:]
    if fmt == "png":
        # zlib's best effort pays on black and white (the samples), not on grey noise,
        # where it only triples the time a 300 dpi page takes.
        first.save(out, "PNG", dpi=(dpi, dpi), optimize=bilevel)
    elif fmt == "jpeg":
        first.convert("L").save(out, "JPEG", dpi=(dpi, dpi), quality=60)
    elif fmt == "tiff":
        compression = "group4" if bilevel else "tiff_deflate"
        first.save(out, "TIFF", dpi=(dpi, dpi), save_all=True, append_images=rest,
                   compression=compression)  # fmt: skip
    else:
        # Pillow writes each page as one image (JPEG-coded when greyscale): no text layer.
        first.save(out, "PDF", resolution=float(dpi), save_all=True, append_images=rest,
                   title=title, creationDate=PDF_DATE, modDate=PDF_DATE)  # fmt: skip
    return out.getvalue()
