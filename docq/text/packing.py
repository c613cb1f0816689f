"""Pack windows into Triton batches that respect the model's limits and waste little padding.

Windows are sorted by length and cut into batches of at most `max_batch_size` windows and
at most `token_budget` padded tokens (batch size x longest window); each batch is padded
only to its own longest window. Padding everything to max_seq_len, as a naive server
does, computes mostly zeros when documents are short or end in a short last window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from docq.text.windowing import Window

IdsAndMask = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def pad(windows: Sequence[Window], pad_id: int = 0) -> IdsAndMask:
    """input_ids and attention_mask of windows padded to their longest (mask 0 on padding)."""
    longest = max(w.length for w in windows)
    ids = np.full((len(windows), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(windows), longest), dtype=np.int64)
    for row, w in enumerate(windows):
        ids[row, : w.length] = w.ids
        mask[row, : w.length] = 1
    return ids, mask


@dataclass(frozen=True, slots=True)
class Batch:
    """One Triton request: padded inputs and which windows its rows are."""

    rows: tuple[int, ...]  # indices into the packed window list, one per row
    input_ids: npt.NDArray[np.int64]  # [rows, longest window]
    attention_mask: npt.NDArray[np.int64]

    @property
    def real_tokens(self) -> int:
        return int(self.attention_mask.sum())

    @property
    def computed_tokens(self) -> int:
        return int(self.input_ids.size)


def batch_fit(longest: int, max_batch_size: int, token_budget: int | None = None) -> int:
    """How many windows fit in a batch whose longest window has `longest` tokens."""
    fit = max_batch_size
    if token_budget is not None:
        fit = min(fit, token_budget // longest)
    return max(1, fit)


def pack(
    windows: Sequence[Window],
    max_batch_size: int,
    token_budget: int | None = None,
    pad_id: int = 0,
) -> list[Batch]:
    """Batches covering every window exactly once, longest windows first."""
    if max_batch_size < 1:
        raise ValueError("max_batch_size must be >= 1")
    order = sorted(range(len(windows)), key=lambda i: windows[i].length, reverse=True)
    batches: list[Batch] = []
    start = 0
    while start < len(order):
        # longest-first order: the first window of a batch sets its padded width
        fit = batch_fit(windows[order[start]].length, max_batch_size, token_budget)
        rows = order[start : start + fit]
        ids, mask = pad([windows[i] for i in rows], pad_id)
        batches.append(Batch(rows=tuple(rows), input_ids=ids, attention_mask=mask))
        start += len(rows)
    return batches


def padding_efficiency(batches: Sequence[Batch]) -> float:
    """Real tokens / computed tokens over a set of batches (1.0 = no padding at all)."""
    computed = sum(b.computed_tokens for b in batches)
    return sum(b.real_tokens for b in batches) / computed if computed else 1.0
