"""Padded, length-sorted batches of windows: what every model run in conversion/ consumes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from workers.windowing import Window

IdsAndMask = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]


def pad(windows: Sequence[Window]) -> IdsAndMask:
    """input_ids and attention_mask for windows padded to the longest (pad id 0, mask 0)."""
    longest = max(w.length for w in windows)
    ids = np.zeros((len(windows), longest), dtype=np.int64)
    mask = np.zeros((len(windows), longest), dtype=np.int64)
    for row, w in enumerate(windows):
        ids[row, : w.length] = w.ids
        mask[row, : w.length] = 1
    return ids, mask


def by_length(windows: Sequence[Window], batch_size: int) -> Iterator[tuple[list[int], IdsAndMask]]:
    """Batches of windows of similar length (little padding), with the windows' indices."""
    order = sorted(range(len(windows)), key=lambda i: (windows[i].length, i))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        yield chunk, pad([windows[i] for i in chunk])
