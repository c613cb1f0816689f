"""Document-level accuracy of an exported model, read the way docq serves it.

Each document is tokenized whole, cut into windows by `docq.text.windowing`, the windows run
in padded batches, and `docq.text.aggregation` combines each document's window logits: the
same path as production, so the number measured here is the number users get.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from docq.text.aggregation import Aggregation, Prediction, aggregate
from docq.text.packing import IdsAndMask, pack
from docq.text.windowing import Window

Runner = Callable[[IdsAndMask], npt.NDArray[np.float32]]


def window_logits(
    run: Runner, windows: Sequence[Window], batch_size: int
) -> npt.NDArray[np.float32]:
    """Logits of every window (in window order), batched by similar length."""
    out: npt.NDArray[np.float32] | None = None
    for batch in pack(windows, batch_size):
        logits = run((batch.input_ids, batch.attention_mask))
        if out is None:
            out = np.empty((len(windows), logits.shape[1]), dtype=np.float32)
        out[list(batch.rows)] = logits
    assert out is not None, "no windows"
    return out


def classify(
    run: Runner,
    windows_per_doc: Sequence[Sequence[Window]],
    labels: Sequence[str],
    how: Aggregation,
    batch_size: int,
) -> list[Prediction]:
    """One prediction per document from its windows' aggregated logits."""
    flat = [w for ws in windows_per_doc for w in ws]
    return predictions(window_logits(run, flat, batch_size), windows_per_doc, labels, how)


def predictions(
    logits: npt.NDArray[np.float32],
    windows_per_doc: Sequence[Sequence[Window]],
    labels: Sequence[str],
    how: Aggregation,
) -> list[Prediction]:
    """One prediction per document from the logits of all windows (documents in order)."""
    out, start = [], 0
    for ws in windows_per_doc:
        end = start + len(ws)
        out.append(aggregate(logits[start:end], [w.length for w in ws], labels, how))
        start = end
    return out


@dataclass(frozen=True)
class Accuracy:
    """Overall and per-class accuracy of predictions against true labels."""

    n: int
    accuracy: float
    per_class: dict[str, float]
    support: dict[str, int]

    @classmethod
    def of(cls, predicted: Sequence[str], truth: Sequence[str], labels: Sequence[str]) -> Accuracy:
        hits = [p == t for p, t in zip(predicted, truth, strict=True)]
        per_class, support = {}, {}
        for label in labels:
            mine = [h for h, t in zip(hits, truth, strict=True) if t == label]
            support[label] = len(mine)
            per_class[label] = sum(mine) / len(mine) if mine else float("nan")
        return cls(
            n=len(hits),
            accuracy=sum(hits) / max(len(hits), 1),
            per_class=per_class,
            support=support,
        )
