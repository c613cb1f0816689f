"""corpus/text_layer.py: a document's text as a PDF text layer gives it back."""

from __future__ import annotations

import random

from corpus.layout import ruled
from corpus.text_layer import text_layer

TYPED = "\n".join(
    [
        "Northwind Trading Ltd                       Invoice No: INV-2024-00012",
        "12 Mill Lane                                Invoice date: 2024-03-01",
        "",
        *ruled([["Pos", "Description", "Amount"], ["1", "Consulting services", "1,200.00"]]),
        "Payment terms: net 30 days. " * 6,
    ]
)


def test_every_word_survives_in_some_order() -> None:
    words = {w.strip(":|-") for w in TYPED.split()} - {""}
    for seed in range(30):
        read = text_layer(random.Random(seed), TYPED)
        got = {w.strip(":|-") for w in read.replace("-\n", "").split()}
        assert words <= got | {w for w in words if not any(c.isalnum() for c in w)}, seed


def test_layout_is_lost_in_most_readings() -> None:
    readings = [text_layer(random.Random(seed), TYPED) for seed in range(40)]
    collapsed = [r for r in readings if "   " not in r and "+---" not in r]
    assert 0.3 * len(readings) < len(collapsed) < len(readings)
    assert any(max(len(line) for line in r.split("\n")) < 100 for r in readings)  # wrapped
