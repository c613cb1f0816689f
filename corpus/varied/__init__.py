"""Seeded labelled documents in the many shapes real paperwork takes, beside the
letterhead-and-table documents of corpus.doc_type: e-mails that carry a quotation or an
order, terse till slips, one-paragraph contracts and receipts, forms of labelled fields,
documents with no heading, other countries' currencies, taxes and dates, and lines that
cite the sale's other documents (an invoice naming its purchase order, a delivery note its
invoice). Augmented as text reaches the model: words dropped, blocks reordered, line breaks
or case lost, scan errors.

Written for doc-type's training beside corpus.doc_type and corpus.written
(conversion/demo_train.py).

    python -m corpus.varied --n 12 --seed 7 --out /tmp/varied
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from corpus.doc_type import LABELS, LabelledDocument
from corpus.varied.augment import augment
from corpus.varied.shapes import SHAPES, context
from corpus.varied.world import world


def document(seed: int, i: int, label: str) -> LabelledDocument:
    """The `i`-th varied document of a seed, written as `label`; depends on nothing else."""
    rng = random.Random(f"docq-varied:{seed}:{i}")
    w = world(rng)
    shape = rng.choices([s for s, _ in SHAPES], weights=[p for _, p in SHAPES])[0]
    lines = shape(rng, w, label, context(rng, w, label))
    text = "\n".join(lines).strip()
    return LabelledDocument(id=f"var-{seed}-{i:06d}", text=augment(rng, text), label=label)


def generate(n: int, seed: int) -> list[LabelledDocument]:
    """`n` documents with balanced labels (counts differ by at most one), the same for a seed."""
    labels = [LABELS[i % len(LABELS)] for i in range(n)]
    random.Random(f"docq-varied-labels:{seed}").shuffle(labels)
    return [document(seed, i, label) for i, label in enumerate(labels)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m corpus.varied",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("--n", type=int, default=12)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for doc in generate(args.n, args.seed):
        (args.out / f"{doc.id}-{doc.label}.txt").write_text(doc.text + "\n", encoding="utf-8")
    print(f"wrote {args.n} documents to {args.out}")
