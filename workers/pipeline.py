"""Classify documents: tokenize -> windows -> batches -> Triton -> per-document predictions.

Plain functions over plain data; the Celery task only loads ids and stores the outcome.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt
from transformers import PreTrainedTokenizerFast

from docq.models import ModelSpec
from workers.aggregation import Aggregation, Prediction, aggregate
from workers.packing import Batch, pack
from workers.tokenizing import tokenize, window_spec
from workers.windowing import Window, split_all


class Infer(Protocol):
    def infer(
        self, spec: ModelSpec, batches: Sequence[Batch], *, priority: int = 0
    ) -> list[npt.NDArray[np.float32]]: ...


def window_logits(
    windows: Sequence[Window], batches: Sequence[Batch], logits: Sequence[npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    """Put each batch row's logits back at its window's position."""
    n_labels = logits[0].shape[1] if logits else 0
    out = np.empty((len(windows), n_labels), dtype=np.float32)
    for batch, rows in zip(batches, logits, strict=True):
        out[list(batch.rows)] = rows
    return out


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
    triton: Infer,
    *,
    priority: int = 0,
) -> list[Prediction]:
    """Predictions for `texts`, in order. Every token of every text is read."""
    windows = split_all(tokenize(tok, texts), window_spec(tok, spec.max_seq_len, spec.stride))
    budget = spec.token_budget or spec.max_batch_size * spec.max_seq_len
    batches = pack(windows, spec.max_batch_size, budget, pad_id=tok.pad_token_id or 0)
    logits = triton.infer(spec, batches, priority=priority)
    return predictions(windows, window_logits(windows, batches, logits), len(texts), spec)
