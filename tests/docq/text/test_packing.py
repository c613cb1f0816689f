from __future__ import annotations

import numpy as np
import pytest

from docq.text.packing import batch_fit, is_full, pack, padding_efficiency
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


def test_a_ragged_budget_counts_real_tokens() -> None:
    ws = windows(*([512] + [100] * 64))
    padded = pack(ws, max_batch_size=64, token_budget=6400 + 512)
    # padded: the 512-token window makes every row of its batch cost 512 tokens
    assert [len(b.rows) for b in padded] == [13, 52]
    ragged = pack(ws, max_batch_size=65, token_budget=6400 + 512, ragged=True)
    assert [len(b.rows) for b in ragged] == [65]
    (alone,) = pack(windows(*[100] * 64), max_batch_size=64, token_budget=6400, ragged=True)
    assert len(alone.rows) == 64


def test_a_ragged_budget_cuts_where_the_next_window_would_pass_it() -> None:
    ws = windows(300, 250, 200, 150, 100, 100, 50)
    batches = pack(ws, max_batch_size=8, token_budget=500, ragged=True)
    assert [[ws[r].length for r in b.rows] for b in batches] == [
        [300],  # 300 + 250 > 500
        [250, 200],
        [150, 100, 100, 50],
    ]
    assert all(b.real_tokens <= 500 for b in batches)
    assert sorted(r for b in batches for r in b.rows) == list(range(len(ws)))


def test_a_ragged_batch_still_holds_at_most_max_batch_size_windows() -> None:
    batches = pack(windows(*[10] * 20), max_batch_size=8, token_budget=10_000, ragged=True)
    assert [len(b.rows) for b in batches] == [8, 8, 4]
    assert batch_fit([10] * 20, 8, None, ragged=True) == 8


def test_a_window_over_a_ragged_budget_goes_alone() -> None:
    ws = windows(512, 600, 20, 20)
    batches = pack(ws, max_batch_size=4, token_budget=100, ragged=True)
    assert [[ws[r].length for r in b.rows] for b in batches] == [[600], [512], [20, 20]]


def test_ragged_packing_covers_every_window_exactly_once() -> None:
    rng = np.random.default_rng(1)
    ws = windows(*rng.integers(1, 512, size=300).tolist())
    batches = pack(ws, max_batch_size=16, token_budget=2048, ragged=True)
    assert sorted(r for b in batches for r in b.rows) == list(range(len(ws)))
    assert all(len(b.rows) <= 16 for b in batches)
    assert all(b.real_tokens <= 2048 or len(b.rows) == 1 for b in batches)


def test_the_padded_rule_is_rows_times_the_longest_window() -> None:
    assert batch_fit([512, 100, 100, 100], 8, 1024) == 2
    assert batch_fit([100] * 8, 8, 1024) == 8
    assert batch_fit([100] * 3, 8, 1024) == 3
    assert batch_fit([700], 8, 512) == 1
    assert batch_fit([], 8, 512) == 0
    assert batch_fit([512, 100], 4, 1024, ragged=True) == 2


def test_a_batch_is_full_when_no_window_more_could_join() -> None:
    assert is_full([512, 100], 8, 1024)  # a third row would cost 3 x 512 padded tokens
    assert not is_full([512, 100], 8, 1024, ragged=True)  # 612 real tokens: room for more
    assert not is_full([512, 511], 8, 1024, ragged=True)  # a 1-token window fits: 1024
    assert is_full([512, 512], 8, 1024, ragged=True)
    assert is_full([10] * 8, 8, 1024, ragged=True)
    assert not is_full([10] * 7, 8, None, ragged=True)


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
