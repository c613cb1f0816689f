"""Seeded synthetic business documents with labels: the demo model's data and the test inputs.

The documents read like OCR'd paperwork (letterheads, line-item tables, totals, VAT, legal
terms, page headers and company footers, scan errors), some as a PDF's text layer reads.
Lengths follow what a document classifier meets in practice: about half fit in one
512-token window, a long tail of multi-page documents does not, and a few run to thousands
of tokens.

    python -m corpus.doc_type --n 50 --seed 7 --out samples/
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corpus.commercial import invoice, purchase_order, quotation
from corpus.contract import contract
from corpus.delivery import delivery_note
from corpus.layout import ocr_noise
from corpus.receipt import receipt
from corpus.text_layer import text_layer

# The model's label order (logit i is LABELS[i]); never reorder, only append.
LABELS: tuple[str, ...] = (
    "invoice",
    "receipt",
    "purchase_order",
    "quotation",
    "delivery_note",
    "contract",
)

_WRITERS: dict[str, Callable[[random.Random], str]] = {
    "invoice": invoice,
    "receipt": receipt,
    "purchase_order": purchase_order,
    "quotation": quotation,
    "delivery_note": delivery_note,
    "contract": contract,
}


# The share of documents read back as a PDF text layer or OCR gives them (corpus.text_layer):
# uploads are files more often than typed text, and extraction loses the layout.
TEXT_LAYER_SHARE = 0.4


@dataclass(frozen=True)
class LabelledDocument:
    """One synthetic document and its true class."""

    id: str
    text: str
    label: str


def document(seed: int, i: int, label: str) -> LabelledDocument:
    """The `i`-th document of a seed, written as `label`; depends on nothing else."""
    # A string seed is hashed with SHA-512 by `random`, so it is stable across processes
    # (unlike hash()) and every document has its own independent stream.
    rng = random.Random(f"docq-corpus:{seed}:{i}")
    text = _WRITERS[label](rng)
    if rng.random() < TEXT_LAYER_SHARE:
        text = text_layer(rng, text)
    text = ocr_noise(rng, text)
    return LabelledDocument(id=f"doc-{seed}-{i:06d}", text=text, label=label)


def generate(n: int, seed: int) -> list[LabelledDocument]:
    """`n` documents with balanced labels (counts differ by at most one), the same for a seed."""
    if n < 0:
        raise ValueError("n must be >= 0")
    labels = [LABELS[i % len(LABELS)] for i in range(n)]
    random.Random(f"docq-labels:{seed}").shuffle(labels)
    return [document(seed, i, label) for i, label in enumerate(labels)]


def main(argv: list[str] | None = None) -> None:
    """Write `n` documents as `<id>.txt` files (the file name is the document id)."""
    parser = argparse.ArgumentParser(
        prog="python -m corpus.doc_type", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--n", type=int, default=50, help="number of documents")
    parser.add_argument(
        "--seed", type=int, default=7, help="corpus seed (same seed, same documents)"
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to write the .txt files to")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    docs = generate(args.n, args.seed)
    for doc in docs:
        (args.out / f"{doc.id}.txt").write_text(doc.text + "\n", encoding="utf-8")
    print(f"wrote {len(docs)} documents to {args.out}")


if __name__ == "__main__":
    main()
