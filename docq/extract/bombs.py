"""Decompression bombs found before a parser inflates them: a PDF's Flate streams.

A PDF stream of a few KiB can inflate to gigabytes (a content or object stream of zeros).
PDFium would allocate it whole. Here each stream that starts with a zlib header is inflated
in 1 MiB steps, counting and discarding, until the total over all streams passes the limit:
the cost is bounded by the limit (zlib inflates ~0.5 GB/s), never by the bomb.
"""

from __future__ import annotations

import re
import zlib

from docq.errors import ExtractionFailed

_STREAM = re.compile(rb"(?<!end)stream\r?\n")
STEP = 1 << 20
CHUNK = 1 << 16


def check_flate_streams(data: bytes, limit: int) -> int:
    """The bytes the PDF's Flate streams inflate to (all together), or "too_large"."""
    total = 0
    for match in _STREAM.finditer(data):
        total += _inflated(data, match.end(), limit - total)
        if total > limit:
            raise ExtractionFailed(
                "too_large", f"the PDF's compressed streams inflate past {limit:,} bytes"
            )
    return total


def _inflated(data: bytes, start: int, budget: int) -> int:
    """How much the zlib stream at `start` inflates to (stopping once past `budget`)."""
    inflater = zlib.decompressobj()
    out = 0
    pos = start
    try:
        while not inflater.eof and pos < len(data) and out <= budget:
            chunk = inflater.unconsumed_tail or data[pos : pos + CHUNK]
            if not inflater.unconsumed_tail:
                pos += CHUNK
            out += len(inflater.decompress(chunk, STEP))
    except zlib.error:
        pass  # not Flate (an image's DCT, raw bytes) or corrupt: PDFium judges those
    return out
