"""Scans and phone photos (PNG, JPEG, TIFF): pixel count checked from the header, then OCR.

Pillow's `Image.open` reads only the header, so the size is known before a byte of pixels
is decoded: a 100,000 x 100,000 PNG of a few KiB is refused as too_many_pixels without
allocating its 10 GB. `Image.MAX_IMAGE_PIXELS` is set to the same limit so that Pillow's
own guard (and anything decoded through it, e.g. a TIFF frame) agrees.
"""

from __future__ import annotations

import io
import math
import time
import warnings
from collections.abc import Iterator

from PIL import Image, ImageOps, UnidentifiedImageError

from docq.errors import ExtractionFailed
from docq.extract.base import JPEG, PNG, TIFF, Extracted, Limits, finish
from docq.extract.ocr import ocr_image

FORMATS = {PNG: "PNG", JPEG: "JPEG", TIFF: "TIFF"}  # Pillow's names of the content types


def extract_image(
    data: bytes, content_type: str, limits: Limits, deadline: float = math.inf
) -> Extracted:
    """Every page (TIFF frame) of the image, OCR'd."""
    texts = []
    for number, page in enumerate(pages(data, content_type, limits), start=1):
        if time.monotonic() > deadline:
            raise ExtractionFailed("timeout", f"still reading frame {number}")
        texts.append(ocr_image(page, limits))
    return finish("\n\n".join(t.strip() for t in texts), len(texts), "ocr", limits)


def pages(data: bytes, content_type: str, limits: Limits) -> Iterator[Image.Image]:
    """The decoded pages of the image, in grey, each checked against the limits first."""
    image = open_image(data, content_type, limits)
    count = getattr(image, "n_frames", 1)
    if count > limits.max_pages:
        raise ExtractionFailed("too_many_pages", f"{count} frames, more than {limits.max_pages}")
    for index in range(count):
        image.seek(index)
        check_pixels(image.size, limits, f"frame {index + 1}")
        yield decode(image)


def open_image(data: bytes, content_type: str, limits: Limits) -> Image.Image:
    """The image, its header read and nothing decoded; its format the declared one."""
    Image.MAX_IMAGE_PIXELS = limits.max_pixels
    try:
        with warnings.catch_warnings():
            # Pillow warns between 1x and 2x its limit and raises above: check_pixels decides
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=[FORMATS[content_type]])
    except Image.DecompressionBombError as exc:
        raise ExtractionFailed("too_many_pixels", f"the image is too large: {exc}") from None
    except UnidentifiedImageError:  # the magic number matched (dispatch): the rest did not
        raise ExtractionFailed(
            "unreadable", f"the {FORMATS[content_type]} header is broken"
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:  # Pillow's other header errors
        raise ExtractionFailed("unreadable", f"the image header is broken: {exc}") from None
    check_pixels(image.size, limits, "the image")
    return image


def check_pixels(size: tuple[int, int], limits: Limits, what: str) -> None:
    width, height = size
    if width <= 0 or height <= 0:
        raise ExtractionFailed("unreadable", f"{what} is {width} x {height} pixels")
    if width * height > limits.max_pixels:
        raise ExtractionFailed(
            "too_many_pixels",
            f"{what} is {width} x {height} pixels, more than {limits.max_pixels:,}",
        )


def decode(image: Image.Image) -> Image.Image:
    """The frame's pixels, upright (EXIF orientation of phone photos) and in grey."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image.load()
            upright = ImageOps.exif_transpose(image) or image
            return upright.convert("L")
    except Image.DecompressionBombError as exc:
        raise ExtractionFailed("too_many_pixels", f"the image is too large: {exc}") from None
    except OSError as exc:
        if "truncated" in str(exc):
            raise ExtractionFailed("truncated", f"the image ends early: {exc}") from None
        raise ExtractionFailed("unreadable", f"the image cannot be decoded: {exc}") from None
    except (SyntaxError, ValueError, EOFError) as exc:
        raise ExtractionFailed("unreadable", f"the image cannot be decoded: {exc}") from None
