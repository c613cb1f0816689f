"""The bench's corpus as each side sees it: the documents (corpus.doc_type, also written by
several processes for the GPU bench), their windows as the workers cut them, and what each
side pads them to."""

from __future__ import annotations

import random
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from corpus.doc_type import LABELS as CORPUS_LABELS
from corpus.doc_type import LabelledDocument, document
from docq.models import ModelSpec
from docq.text import tokens
from docq.text.packing import Batch, pad
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import Window, split_all


def windows_of(docs: Sequence[LabelledDocument], model: ModelSpec) -> list[Window]:
    """Every document's windows, cut as the workers cut them for `model`."""
    tok = load_tokenizer(model.tokenizer_dir)
    spec = window_spec(tok, model.max_seq_len, model.stride)
    return split_all(tokenize(tok, [d.text for d in docs]), spec)


def baseline_padding(windows: Sequence[Window]) -> float:
    """Real / computed tokens of the old architecture: each document's windows in one
    batch, padded to that document's own longest window."""
    by_doc: dict[int, list[Window]] = {}
    for w in windows:
        by_doc.setdefault(w.doc, []).append(w)
    computed = sum(pad(ws)[0].size for ws in by_doc.values())
    return sum(w.length for w in windows) / computed


def padding_report(windows: Sequence[Window], ceiling: Sequence[Batch]) -> dict[str, Any]:
    real = sum(w.length for w in windows)
    computed = sum(b.computed_tokens for b in ceiling)
    return {
        "windows": len(windows),
        "real_tokens": real,
        "ceiling_computed_tokens": computed,
        "ceiling_padding_efficiency": round(real / computed, 4),
        "baseline_padding_efficiency": round(baseline_padding(windows), 4),
        # Neither side computes this; it is what fixed-shape inputs would cost.
        "pad_to_512_efficiency": round(real / (len(windows) * 512), 4),
    }


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
    texts, spec = [d.text for d in docs], window_spec(tok, 512, 64)
    return [len(ws) for ws in tokens.windows_of(tok, texts, spec)]


def longest(docs: Sequence[LabelledDocument], counts: Sequence[int], n: int) -> list[int]:
    """Indices of the `n` documents with the most windows (then the longest text)."""
    order = sorted(range(len(docs)), key=lambda i: (-counts[i], -len(docs[i].text), i))
    return sorted(order[:n])
