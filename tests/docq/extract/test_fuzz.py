"""Fuzzing the readers (issue 21, part 4): random bytes and mutated honest files, under every
content type, make extract() return or raise ExtractionFailed, nothing else; through the
isolated child too, which then still reads the next document."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docq.errors import ExtractionFailed
from docq.extract import CONTENT_TYPES, Extracted, Limits, extract, sniff
from docq.extract.base import DOCX, HTML, JPEG, PDF, PNG, TEXT, TIFF
from docq.extract.isolation import ExtractorPool
from tests.docq.extract import samples

# A mutation that repeats a slice 50 times makes an input of a hundred kB or more, whose
# repr Hypothesis warns about building (HypothesisWarning, "Generating overly large repr")
# when it reports or explains an example; `filterwarnings = error` turned that note about
# the report's size into a failure of the test (once in nine runs on 2026-12-06).
pytestmark = pytest.mark.filterwarnings(
    "ignore:Generating overly large repr:hypothesis.errors.HypothesisWarning"
)

# Small limits: a mutated scan must not cost seconds of OCR per example.
LIMITS = Limits(ocr_dpi=72, max_pixels=2_000_000, timeout_s=5, max_decompressed_bytes=16 << 20)
FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,  # nothing written into the work tree
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

_SCAN = samples.page_image(["Fuzzed 42"], (300, 120))
SEEDS = {
    PDF: samples.pdf(["Invoice 42 total 10.00", _SCAN]),
    DOCX: samples.word(["Contract"], [["a", "b"]]),
    PNG: samples.image_bytes(_SCAN, "PNG"),
    JPEG: samples.image_bytes(_SCAN, "JPEG"),
    TIFF: samples.tiff_pages([_SCAN, _SCAN]),
    HTML: b"<html><body><p>Hello <b>there</b></p><table><tr><td>1</td></tr></table></body></html>",
    TEXT: "Rechnung \u20ac 12".encode(),
}


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """The seed with a few bytes overwritten, a slice cut out or repeated, or cut short."""
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["overwrite", "delete", "repeat", "truncate", "insert"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        size = draw(st.integers(1, 64))
        if kind == "overwrite":
            data[at : at + size] = draw(st.binary(min_size=size, max_size=size))
        elif kind == "delete":
            del data[at : at + size]
        elif kind == "repeat":
            data[at:at] = data[at : at + size] * draw(st.integers(2, 50))
        elif kind == "truncate":
            del data[at:]
        else:
            data[at:at] = draw(st.binary(min_size=1, max_size=size))
    return bytes(data)


def outcome(data: bytes, content_type: str) -> Extracted | ExtractionFailed:
    try:
        return extract(data, content_type, LIMITS)
    except ExtractionFailed as exc:
        return exc


@FUZZ
@given(data=st.binary(max_size=4096), content_type=st.sampled_from(sorted(CONTENT_TYPES)))
def test_random_bytes_under_any_type_are_read_or_an_extraction_failure(
    data: bytes, content_type: str
) -> None:
    got = outcome(data, content_type)
    if isinstance(got, ExtractionFailed):
        assert got.code in ExtractionFailed.CODES and got.message


@FUZZ
@given(data=st.one_of(st.binary(max_size=2048), *(mutated(seed) for seed in SEEDS.values())))
def test_sniff_never_raises_and_names_a_content_type_or_none(data: bytes) -> None:
    found = sniff(data)
    assert found is None or found in CONTENT_TYPES
    if found in (TEXT, HTML):  # what it calls text, the text readers can decode
        assert data.decode("utf-8-sig") is not None


@pytest.mark.parametrize("content_type", sorted(SEEDS))
def test_mutated_files_are_read_or_an_extraction_failure(content_type: str) -> None:
    @FUZZ
    @given(data=mutated(SEEDS[content_type]))
    def check(data: bytes) -> None:
        got = outcome(data, content_type)
        if isinstance(got, Extracted):
            assert got.text and got.pages > 0 and got.chars >= len(got.text)

    check()


@pytest.fixture(scope="module")
def pool() -> Iterator[ExtractorPool]:
    pool = ExtractorPool(1)
    yield pool
    pool.close()


@settings(FUZZ, max_examples=25)
@given(content_type=st.sampled_from(sorted(SEEDS)), data=st.data())
def test_the_isolated_child_returns_or_fails_and_keeps_reading(
    pool: ExtractorPool, content_type: str, data: st.DataObject
) -> None:
    bad = data.draw(mutated(SEEDS[content_type]))
    try:
        pool.extract(bad, content_type, LIMITS)
    except ExtractionFailed as exc:
        assert exc.code in ExtractionFailed.CODES
    assert pool.extract(b"still reading", TEXT, LIMITS).text == "still reading"
