"""docq/extract/text.py through extract(): plain text and HTML."""

from __future__ import annotations

import pytest

from docq.errors import ExtractionFailed
from docq.extract import Extracted, Limits, extract

LIMITS = Limits()


def test_plain_text_is_one_page_read_as_it_is() -> None:
    text = "Rechnung Nr. 7\nBetrag: 12,50 \u20ac"
    got = extract(f"\ufeff{text}\n".encode(), "text/plain", LIMITS)  # BOM and newline dropped
    assert got == Extracted(text, 1, "text", 30)


def test_a_content_type_with_parameters_is_read() -> None:
    assert extract(b"hi", "text/plain; charset=utf-8", LIMITS).text == "hi"


def test_text_that_is_not_utf8_is_not_utf8_as_at_upload() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(b"caf\xe9 cr\xe8me", "text/plain", LIMITS)
    assert caught.value.code == "not_utf8"


def test_blank_text_is_no_text() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(b" \n\t\n", "text/plain", LIMITS)
    assert caught.value.code == "no_text"


def test_max_chars_cuts_the_text_and_chars_counts_what_was_read() -> None:
    got = extract(b"x" * 100, "text/plain", Limits(max_chars=10))
    assert (got.text, got.chars) == ("x" * 10, 100)


EMAIL = b"""<!DOCTYPE html><html><head><title>Your invoice</title>
<style>p { color: red }</style><script>var tracking = "SECRET";</script></head>
<body><div>Dear customer,</div><p>your invoice <b>INV-42</b> is attached.</p>
<table><tr><td>Item</td><td>Price</td></tr><tr><td>Widget</td><td>9.99</td></tr></table>
<noscript>enable scripts</noscript><!-- a comment --><template>hidden</template>
<p>Kind&nbsp;regards &amp; thanks</p></body></html>"""


def test_html_keeps_the_text_a_reader_sees_and_drops_markup_scripts_and_styles() -> None:
    got = extract(EMAIL, "text/html", LIMITS)
    lines = got.text.splitlines()
    assert "Dear customer," in lines
    assert "your invoice INV-42 is attached." in lines  # inline markup does not split lines
    assert "Kind regards & thanks" in lines  # entities decoded
    assert {"Item", "Price", "Widget", "9.99"} <= set(lines)  # cells do not run together
    for hidden in ("SECRET", "color", "enable scripts", "a comment", "hidden", "<", "Your invoice"):
        assert hidden not in got.text
    assert (got.pages, got.extraction) == (1, "text")


def test_html_with_only_a_script_is_no_text() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(b"<html><body><script>alert(1)</script></body></html>", "text/html", LIMITS)
    assert caught.value.code == "no_text"


def test_an_unsupported_type_is_refused() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(b"GIF89a", "image/gif", LIMITS)
    assert caught.value.code == "unsupported_type"


def test_an_unknown_code_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        ExtractionFailed("nope", "not a code")
