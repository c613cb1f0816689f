"""Classify documents: tokenize -> windows -> batches -> Triton -> per-document predictions.

Plain functions over plain data; the Celery task only loads ids and stores the outcome.
Batching is the process's `Batcher` (workers/batcher.py): it packs these windows together
with those of the other shards the process runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
from transformers import PreTrainedTokenizerFast

from docq.errors import WindowsRejected
from docq.models import ModelSpec
from docq.text.aggregation import Aggregation, Prediction, aggregate
from docq.text.tokenizing import tokenize, window_spec
from docq.text.windowing import Window, split_all


class InferWindows(Protocol):
    def infer(
        self, spec: ModelSpec, windows: Sequence[Window], *, pad_id: int = 0, priority: int = 0
    ) -> npt.NDArray[np.float32]: ...


def predictions(
    windows: Sequence[Window], per_window: npt.NDArray[np.float32], n_docs: int, spec: ModelSpec
) -> list[Prediction]:
    """One prediction per document from its windows' logits."""
    by_doc: list[list[int]] = [[] for _ in range(n_docs)]
    for i, w in enumerate(windows):
        by_doc[w.doc].append(i)
    how = Aggregation(spec.aggregation)
    return [
        aggregate(per_window[idx], [windows[i].length for i in idx], spec.labels, how)
        for idx in by_doc
    ]


def classify(
    texts: Sequence[str],
    spec: ModelSpec,
    tok: PreTrainedTokenizerFast,
    batcher: InferWindows,
    *,
    priority: int = 0,
) -> list[Prediction]:
    """Predictions for `texts`, in order. Every token of every text is read."""
    windows = split_all(tokenize(tok, texts), window_spec(tok, spec.max_seq_len, spec.stride))
    logits = batcher.infer(spec, windows, pad_id=tok.pad_token_id or 0, priority=priority)
    return predictions(windows, logits, len(texts), spec)


def classify_documents(
    texts: Sequence[str],
    spec: ModelSpec,
    tok: PreTrainedTokenizerFast,
    batcher: InferWindows,
    *,
    priority: int = 0,
) -> list[Prediction | str]:
    """As classify(), but a text whose window the model refused (a permanent error of that
    input, workers/batcher.py) gets the refusal's message instead, and the others their
    predictions."""
    windows = split_all(tokenize(tok, texts), window_spec(tok, spec.max_seq_len, spec.stride))
    try:
        logits = batcher.infer(spec, windows, pad_id=tok.pad_token_id or 0, priority=priority)
        refused: dict[int, str] = {}
    except WindowsRejected as exc:
        logits = exc.logits
        refused = {windows[row].doc: e.message for row, e in exc.errors.items()}
    preds: list[Prediction | str] = list(predictions(windows, logits, len(texts), spec))
    return [refused.get(i, p) for i, p in enumerate(preds)]
