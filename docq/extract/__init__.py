"""Text out of uploaded files (issue 21): PDF, scans and photos (OCR), DOCX, HTML, plain text.

    sniff(data)                          the content type judged from the bytes (the API)
    extract(data, content_type, limits)  the text, in this process (tests, the corpus)
    extract_isolated(...)                the same in a warm child process with a wall-clock
                                         limit and an address-space cap (the extract worker)
    extract_all_isolated(docs, limits)   a shard's (data, content_type) pairs on every child
                                         at once, in order; a failure is its document's item

Every failure is `docq.errors.ExtractionFailed` with a `.code`; a file never crashes or
hangs the caller.
"""

from docq.extract.base import CONTENT_TYPES, Extracted, Limits
from docq.extract.dispatch import extract
from docq.extract.isolation import extract_all_isolated, extract_isolated
from docq.extract.sniff import sniff

__all__ = [
    "CONTENT_TYPES",
    "Extracted",
    "Limits",
    "extract",
    "extract_all_isolated",
    "extract_isolated",
    "sniff",
]
