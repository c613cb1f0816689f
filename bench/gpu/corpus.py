"""The GPU bench's corpus: the bench corpus written by several processes, its windows, and
its longest documents (the long upload)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from corpus.doc_type import LABELS as CORPUS_LABELS
from corpus.doc_type import LabelledDocument, document
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split_all


def _documents(args: tuple[int, list[tuple[int, str]]]) -> list[LabelledDocument]:
    seed, items = args
    return [document(seed, i, label) for i, label in items]


def generate_parallel(n: int, seed: int, processes: int) -> list[LabelledDocument]:
    """corpus.doc_type.generate(n, seed), document for document, written by `processes`
    processes (20,000 documents take about a minute in one)."""
    if n < 0:
        raise ValueError("n must be >= 0")
    order = [CORPUS_LABELS[i % len(CORPUS_LABELS)] for i in range(n)]
    random.Random(f"docq-labels:{seed}").shuffle(order)  # as generate() deals the labels
    items = list(enumerate(order))
    if processes <= 1 or n < 200:
        return _documents((seed, items))
    step = -(-n // (processes * 4))
    chunks = [(seed, items[i : i + step]) for i in range(0, n, step)]
    with ProcessPoolExecutor(processes) as pool:
        return [d for part in pool.map(_documents, chunks) for d in part]


def window_counts(docs: Sequence[LabelledDocument], tokenizer_dir: Path) -> list[int]:
    """Windows of each document as the workers cut them (512 tokens, stride 64)."""
    tok = load_tokenizer(tokenizer_dir)
    spec = window_spec(tok, 512, 64)
    counts = [0] * len(docs)
    for start in range(0, len(docs), 2000):
        ids = tokenize(tok, [d.text for d in docs[start : start + 2000]])
        for w in split_all(ids, spec):
            counts[start + w.doc] += 1
    return counts


def longest(docs: Sequence[LabelledDocument], counts: Sequence[int], n: int) -> list[int]:
    """Indices of the `n` documents with the most windows (then the longest text)."""
    order = sorted(range(len(docs)), key=lambda i: (-counts[i], -len(docs[i].text), i))
    return sorted(order[:n])
