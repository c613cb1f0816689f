from __future__ import annotations

import math

import numpy as np
import pytest

from docq.text.aggregation import Aggregation, aggregate, softmax

LABELS = ("invoice", "receipt", "contract")


def test_single_window_is_softmax_of_its_logits() -> None:
    p = aggregate(np.array([[2.0, 0.0, -1.0]]), [10], LABELS)
    expected = softmax(np.array([2.0, 0.0, -1.0]))
    assert p.label == "invoice"
    assert p.windows == 1
    assert [p.scores[k] for k in LABELS] == pytest.approx(expected.tolist())
    assert math.isclose(sum(p.scores.values()), 1.0, rel_tol=1e-9)


def test_mean_of_window_logits_decides() -> None:
    logits = np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 5.0], [0.0, 0.0, 5.0]])
    p = aggregate(logits, [510, 510, 510], LABELS, Aggregation.MEAN)
    assert p.label == "contract"
    assert p.windows == 3
    assert p.scores["contract"] == pytest.approx(softmax(logits.mean(axis=0))[2])


def test_weighted_lets_a_short_tail_count_less() -> None:
    logits = np.array([[4.0, 0.0, 0.0], [0.0, 0.0, 6.0]])
    assert aggregate(logits, [500, 500], LABELS, Aggregation.MEAN).label == "contract"
    assert aggregate(logits, [500, 20], LABELS, Aggregation.WEIGHTED).label == "invoice"


def test_softmax_is_stable_for_large_logits() -> None:
    p = softmax(np.array([1000.0, 999.0, -1000.0]))
    assert np.all(np.isfinite(p))
    assert p.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("shape", [(0, 3), (2, 2), (3,)])
def test_misshapen_logits_are_refused(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        aggregate(np.zeros(shape), [1] * (shape[0] if shape else 0), LABELS)
