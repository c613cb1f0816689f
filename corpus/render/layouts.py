"""Seeded unseen-template documents with labels: what the file bench and `samples/` draw.

The same seed gives the same documents. The seed stream is kept apart from the training
corpus's (`docq-render:` against `docq-corpus:`), so no document here is one the model saw.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from corpus.doc_type import LABELS
from corpus.render import other, sale
from corpus.render.blocks import Layout

_TEMPLATES: dict[str, Callable[[random.Random], sale.Written]] = {
    "invoice": sale.invoice,
    "receipt": other.receipt,
    "purchase_order": sale.purchase_order,
    "quotation": sale.quotation,
    "delivery_note": sale.delivery_note,
    "contract": other.contract,
}


def layout(seed: int, i: int, label: str) -> Layout:
    """The `i`-th document of a seed, drawn with `label`'s unseen template."""
    rng = random.Random(f"docq-render:{seed}:{i}")
    blocks, footer = _TEMPLATES[label](rng)
    return Layout(
        id=f"{label.replace('_', '-')}-{seed}-{i:04d}",
        label=label,
        template=f"render/{label}",
        blocks=tuple(blocks),
        footer=footer,
        narrow=label == "receipt",
    )


def generate(n: int, seed: int) -> list[Layout]:
    """`n` documents, labels balanced (counts differ by at most one) and in a seeded order."""
    if n < 0:
        raise ValueError("n must be >= 0")
    labels = [LABELS[i % len(LABELS)] for i in range(n)]
    random.Random(f"docq-render-labels:{seed}").shuffle(labels)
    return [layout(seed, i, label) for i, label in enumerate(labels)]
