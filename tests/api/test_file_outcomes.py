"""What becomes of each bad file (issue 37), whoever finds it: the API at upload
(api/files.py file_document: a failed document, never an exception) or the extract worker
reading it (docq.extract): one error_code vocabulary, docq.errors.DOCUMENT_CODES. The six
kinds of the issue's 63-file upload, and text that is not UTF-8."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from api.files import failed, file_document
from docq.errors import DOCUMENT_CODES, ExtractionFailed
from docq.extract import Limits, extract
from docq.extract.base import DOCX, PDF, TEXT
from docq.store import Document
from tests.docq.extract import samples
from tests.files import BAD_KINDS as KINDS

MAX_FILE = 32 << 20
HONEST_PDF = samples.pdf(["Invoice 1001"])


def judged(data: bytes, declared: str | None) -> Document:
    return file_document(
        "f", data, declared, max_file_bytes=MAX_FILE, text_bytes=4000, max_chars=1000
    )


@pytest.mark.parametrize(
    ("make", "declared", "code", "at_upload"), [k[1:] for k in KINDS], ids=[k[0] for k in KINDS]
)
def test_each_bad_kind_ends_as_a_failed_document_with_its_code(
    make: Callable[[], bytes], declared: str, code: str, at_upload: bool
) -> None:
    data = make()
    doc = judged(data, declared)
    if at_upload:
        assert (doc.error_code, doc.content) == (code, None), doc
        assert doc.error and doc.content_type == declared
        return
    # the API cannot tell it from the first bytes: stored as the file it says it is...
    assert doc.error_code is None and doc.content == data and doc.content_type == declared
    with pytest.raises(ExtractionFailed) as caught:  # ...and the worker fails it, same words
        extract(data, declared, Limits())
    assert caught.value.code == code


def test_text_that_is_not_utf8_is_the_same_code_at_upload_and_when_read() -> None:
    data = b"caf\xe9"
    assert judged(data, TEXT).error_code == "not_utf8"
    assert judged(data, None).error_code == "unsupported_type"  # undeclared: no type at all
    with pytest.raises(ExtractionFailed) as caught:
        extract(data, TEXT, Limits())
    assert caught.value.code == "not_utf8"


@pytest.mark.parametrize(
    ("data", "declared", "code"),
    [
        (b"GIF89a\x01\x00\x01\x00", "image/gif", "unsupported_type"),
        (b"\x7fELF\x02\x01\x01\x00" + bytes(56), None, "unsupported_type"),
        (b"x" * 1001, TEXT, "too_large"),  # more characters than max_chars
        (b"\t \r\n", TEXT, "no_text"),
        (b"a\x00b", TEXT, "not_utf8"),
        (b"a\x00b", None, "unsupported_type"),  # undeclared: a NUL says binary, of no type
        (b"a\x01b", None, None),  # UTF-8 with a control byte: text, as it always was
        (HONEST_PDF, DOCX, "type_mismatch"),
        (b"", None, "empty"),
    ],
)
def test_other_bad_files_at_upload(data: bytes, declared: str | None, code: str | None) -> None:
    assert judged(data, declared).error_code == code


def test_a_good_file_and_a_text_file_are_no_failures() -> None:
    assert judged(HONEST_PDF, None) == Document("f", "", PDF, HONEST_PDF)
    assert judged(b"Lease for 3 Elm Road", TEXT) == Document("f", "Lease for 3 Elm Road")


def test_a_code_outside_the_vocabulary_is_a_bug_not_a_result() -> None:
    assert {"empty", "not_utf8", "type_mismatch", "too_large"} <= DOCUMENT_CODES
    with pytest.raises(ValueError):
        failed("f", PDF, "looks_odd", "a code nobody documented")
    with pytest.raises(ValueError):
        ExtractionFailed("looks_odd", "the worker's side refuses it too")
