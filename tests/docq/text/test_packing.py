from __future__ import annotations

import numpy as np
import pytest

from docq.text.packing import pack, padding_efficiency
from docq.text.windowing import Window


def windows(*lengths: int) -> list[Window]:
    return [Window(doc=i, ids=np.arange(1, n + 1, dtype=np.int64)) for i, n in enumerate(lengths)]


def test_every_window_lands_in_exactly_one_row() -> None:
    ws = windows(5, 300, 7, 512, 12, 12, 40)
    batches = pack(ws, max_batch_size=3)
    rows = [r for b in batches for r in b.rows]
    assert sorted(rows) == list(range(len(ws)))
    assert all(len(b.rows) <= 3 for b in batches)


def test_rows_hold_the_window_tokens_padded_with_mask_zero() -> None:
    ws = windows(3, 5)
    (batch,) = pack(ws, max_batch_size=8, pad_id=0)
    assert batch.input_ids.shape == (2, 5)
    assert batch.rows == (1, 0)  # longest first
    assert batch.input_ids[1].tolist() == [1, 2, 3, 0, 0]
    assert batch.attention_mask[1].tolist() == [1, 1, 1, 0, 0]
    assert batch.attention_mask[0].tolist() == [1] * 5


def test_batches_pad_only_to_their_own_longest_window() -> None:
    ws = windows(512, 510, 20, 18, 17, 16)
    batches = pack(ws, max_batch_size=2)
    assert [b.input_ids.shape[1] for b in batches] == [512, 20, 17]
    assert padding_efficiency(batches) > 0.97


def test_token_budget_caps_padded_tokens_per_batch() -> None:
    ws = windows(*([512] * 5 + [64] * 20))
    batches = pack(ws, max_batch_size=16, token_budget=1024)
    assert all(b.computed_tokens <= 1024 for b in batches)
    assert [len(b.rows) for b in batches][:3] == [2, 2, 2]  # 512-token windows: two per batch
    assert sum(len(b.rows) for b in batches) == 25


def test_a_window_longer_than_the_budget_still_gets_a_batch() -> None:
    (batch,) = pack(windows(512), max_batch_size=4, token_budget=100)
    assert batch.rows == (0,)


def test_sorted_packing_beats_padding_to_max_length() -> None:
    rng = np.random.default_rng(0)
    ws = windows(*rng.integers(10, 512, size=200).tolist())
    batches = pack(ws, max_batch_size=8)
    real = sum(w.length for w in ws)
    assert padding_efficiency(batches) > 0.9
    assert padding_efficiency(batches) > real / (len(ws) * 512) + 0.3


def test_empty_input_and_bad_limits() -> None:
    assert pack([], max_batch_size=4) == []
    assert padding_efficiency([]) == 1.0
    with pytest.raises(ValueError):
        pack(windows(3), max_batch_size=0)
