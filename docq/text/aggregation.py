"""Turn per-window logits into one prediction per document."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt


class Aggregation(StrEnum):
    """How the logits of a document's windows combine."""

    MEAN = "mean"  # every window counts the same (the default)
    WEIGHTED = "weighted"  # windows weigh by their real token count: a short tail counts less


@dataclass(frozen=True, slots=True)
class Prediction:
    """A document's label, per-label probabilities and how many windows were read."""

    label: str
    scores: dict[str, float]
    windows: int


def softmax(logits: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Numerically stable softmax over the last axis."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def aggregate(
    logits: npt.NDArray[np.floating],
    lengths: Sequence[int],
    labels: Sequence[str],
    how: Aggregation = Aggregation.MEAN,
) -> Prediction:
    """Combine the logits of one document's windows (shape [windows, labels])."""
    logits = np.asarray(logits, dtype=np.float64)
    if logits.ndim != 2 or logits.shape[0] == 0 or logits.shape[1] != len(labels):
        raise ValueError(f"expected logits of shape [>=1, {len(labels)}], got {logits.shape}")
    if how is Aggregation.WEIGHTED:
        weights = np.asarray(lengths, dtype=np.float64)
        combined = (logits * weights[:, None]).sum(axis=0) / weights.sum()
    else:
        combined = logits.mean(axis=0)
    probs = softmax(combined)
    best = int(np.argmax(probs))
    return Prediction(
        label=labels[best],
        scores={label: float(p) for label, p in zip(labels, probs, strict=True)},
        windows=int(logits.shape[0]),
    )
