"""Decompression bombs found before a parser inflates them: a PDF's Flate streams.

A PDF stream of a few KiB can inflate to gigabytes (a content or object stream of zeros).
PDFium would allocate it whole. Here each stream that starts with a zlib header is inflated
in 1 MiB steps, counting and discarding, so the cost is bounded by the limit (zlib inflates
~0.5 GB/s), never by the bomb:

- an image (its dictionary says /Subtype /Image) is held to what its /Width and /Height
  declare: more than max_pixels is too_many_pixels, inflating past its declared bytes is a
  bomb; honest scans do not count towards the total, so a long scanned PDF is not refused;
- every other stream (content, object streams, fonts) counts towards one total per file,
  held to max_decompressed_bytes.
"""

from __future__ import annotations

import re
import zlib

from docq.errors import ExtractionFailed

_STREAM = re.compile(rb"(?<!end)stream\r?\n")
_IMAGE = re.compile(rb"/Subtype\s*/Image")
_WIDTH = re.compile(rb"/(?:Width|W)\s+(\d+)(?!\s+\d+\s+R)")
_HEIGHT = re.compile(rb"/(?:Height|H)\s+(\d+)(?!\s+\d+\s+R)")
STEP = 1 << 20
CHUNK = 1 << 16
DICT_WINDOW = 4096  # how far before `stream` its dictionary is looked for
BYTES_PER_PIXEL = 8  # the most a pixel may take (4 components of 16 bits)
SLACK = 1 << 16  # predictor bytes and padding past width x height x bytes


def check_flate_streams(data: bytes, max_bytes: int, max_pixels: int) -> int:
    """The bytes the PDF's non-image Flate streams inflate to (all together), or an error."""
    total = 0
    for match in _STREAM.finditer(data):
        head = data[max(0, match.start() - DICT_WINDOW) : match.start()]
        head = head[head.rfind(b"obj") + 1 :]  # this object's dictionary only
        if _IMAGE.search(head) and (size := _declared_pixels(head)) is not None:
            if size > max_pixels:
                raise ExtractionFailed(
                    "too_many_pixels", f"an image in the PDF declares {size:,} pixels"
                )
            budget = size * BYTES_PER_PIXEL + SLACK
            if _inflated(data, match.end(), budget) > budget:
                raise ExtractionFailed(
                    "too_large", "an image stream in the PDF inflates past its declared size"
                )
            continue
        total += _inflated(data, match.end(), max_bytes - total)
        if total > max_bytes:
            raise ExtractionFailed(
                "too_large", f"the PDF's compressed streams inflate past {max_bytes:,} bytes"
            )
    return total


def _declared_pixels(head: bytes) -> int | None:
    width, height = _WIDTH.search(head), _HEIGHT.search(head)
    if width is None or height is None:
        return None  # indirect or missing: the stream counts towards the total instead
    return int(width[1]) * int(height[1])


def _inflated(data: bytes, start: int, budget: int) -> int:
    """How much the zlib stream at `start` inflates to (stopping once past `budget`)."""
    inflater = zlib.decompressobj()
    out = 0
    pos = start
    try:
        while not inflater.eof and out <= budget:
            if inflater.unconsumed_tail:  # input left over from the last, capped, step
                chunk = inflater.unconsumed_tail
            elif pos < len(data):
                chunk, pos = data[pos : pos + CHUNK], pos + CHUNK
            else:
                break
            out += len(inflater.decompress(chunk, STEP))
    except zlib.error:
        pass  # not Flate (an image's DCT, raw bytes) or corrupt: PDFium judges those
    return out
