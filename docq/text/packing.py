"""Pack windows into Triton batches that respect the model's limits and waste little padding.

Windows are sorted by length and cut into batches of at most `max_batch_size` windows and
at most `token_budget` padded tokens (batch size x longest window); each batch is padded
only to its own longest window. Padding everything to max_seq_len, as a naive server
does, computes mostly zeros when documents are short or end in a short last window.

A ragged model (Triton's `allow_ragged_batch`: torch-gpu's flat engine) runs each
request's real tokens only, so its padding costs nothing: its budget counts real tokens
(the sum of the windows' lengths), and short windows fill a batch with more rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

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


def batch_fit(
    lengths: Sequence[int],
    max_batch_size: int,
    token_budget: int | None = None,
    *,
    ragged: bool = False,
) -> int:
    """How many of these windows (their lengths, longest first) the next batch takes: at
    most max_batch_size, and at most token_budget tokens, padded (rows x the first window's
    length) or, for a ragged model, real (the sum of their lengths). At least one: a window
    longer than the budget goes alone."""
    if ragged:
        # running totals grow with each window: those within the budget are a prefix
        totals = accumulate(lengths[:max_batch_size])
        fit = sum(1 for total in totals if token_budget is None or total <= token_budget)
    else:
        fit = min(max_batch_size, len(lengths))
        if token_budget is not None and lengths:
            fit = min(fit, token_budget // lengths[0])
    return max(1, fit) if lengths else 0


def is_full(
    lengths: Sequence[int],
    max_batch_size: int,
    token_budget: int | None = None,
    *,
    ragged: bool = False,
) -> bool:
    """Whether a batch of windows of these lengths (longest first) has no room for one
    window more, however short (a window of one token, no longer than the first)."""
    rows = len(lengths) + 1
    tokens = sum(lengths) + 1 if ragged else rows * lengths[0]
    return rows > max_batch_size or (token_budget is not None and tokens > token_budget)


def pack(
    windows: Sequence[Window],
    max_batch_size: int,
    token_budget: int | None = None,
    pad_id: int = 0,
    *,
    ragged: bool = False,
) -> list[Batch]:
    """Batches covering every window exactly once, longest windows first (`ragged`: the
    budget counts real tokens, see batch_fit)."""
    if max_batch_size < 1:
        raise ValueError("max_batch_size must be >= 1")
    order = sorted(range(len(windows)), key=lambda i: windows[i].length, reverse=True)
    lengths = [windows[i].length for i in order]
    batches: list[Batch] = []
    start = 0
    while start < len(order):
        # longest-first order: the first window of a batch sets its padded width
        ahead = lengths[start : start + max_batch_size]  # all that one batch can take
        fit = batch_fit(ahead, max_batch_size, token_budget, ragged=ragged)
        rows = order[start : start + fit]
        ids, mask = pad([windows[i] for i in rows], pad_id)
        batches.append(Batch(rows=tuple(rows), input_ids=ids, attention_mask=mask))
        start += len(rows)
    return batches


def padding_efficiency(batches: Sequence[Batch]) -> float:
    """Real tokens / computed tokens over a set of batches (1.0 = no padding at all)."""
    computed = sum(b.computed_tokens for b in batches)
    return sum(b.real_tokens for b in batches) / computed if computed else 1.0
