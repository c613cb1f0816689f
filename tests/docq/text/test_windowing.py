from __future__ import annotations

import numpy as np
import pytest

from docq.text.windowing import WindowSpec, split, split_all, window_count

SPEC = WindowSpec(max_seq_len=10, stride=2, cls_id=101, sep_id=102)  # 8 content, step 6


def content(windows) -> list[list[int]]:
    return [w.ids[1:-1].tolist() for w in windows]


def test_short_document_is_one_window_with_special_tokens() -> None:
    (w,) = split(0, [1, 2, 3], SPEC)
    assert w.ids.tolist() == [101, 1, 2, 3, 102]
    assert w.ids.dtype == np.int64
    assert w.length == 5


def test_exactly_full_window_is_one_window() -> None:
    windows = split(0, list(range(8)), SPEC)
    assert len(windows) == 1
    assert windows[0].length == 10


def test_one_token_over_opens_a_second_window_with_overlap() -> None:
    windows = split(0, list(range(9)), SPEC)
    assert content(windows) == [list(range(8)), [6, 7, 8]]  # overlap of stride=2 tokens


def test_every_token_is_read_and_windows_overlap_by_stride() -> None:
    tokens = list(range(1000, 1100))
    windows = split(3, tokens, SPEC)
    assert all(w.doc == 3 for w in windows)
    assert all(w.length <= SPEC.max_seq_len for w in windows)
    seen = [t for c in content(windows) for t in c]
    assert set(seen) == set(tokens)
    for a, b in zip(content(windows), content(windows)[1:], strict=False):
        assert a[-SPEC.stride :] == b[: SPEC.stride]
    assert len(windows) == window_count(len(tokens), SPEC)


def test_empty_document_still_gets_a_window() -> None:
    (w,) = split(0, [], SPEC)
    assert w.ids.tolist() == [101, 102]


@pytest.mark.parametrize(
    ("n", "expected"), [(0, 1), (1, 1), (8, 1), (9, 2), (14, 2), (15, 3), (3000, 500)]
)
def test_window_count(n: int, expected: int) -> None:
    assert window_count(n, SPEC) == expected
    assert len(split(0, list(range(n)), SPEC)) == expected


def test_a_3000_token_document_at_512_is_fully_read() -> None:
    spec = WindowSpec(max_seq_len=512, stride=64, cls_id=101, sep_id=102)
    tokens = list(range(3000))
    windows = split(0, tokens, spec)
    assert len(windows) == 7  # 510 + 6 x 446 >= 3000
    assert windows[-1].ids[-2] == 2999
    assert {t for w in windows for t in w.ids[1:-1].tolist()} == set(tokens)


def test_split_all_numbers_documents_in_order() -> None:
    windows = split_all([[1], list(range(20)), []], SPEC)
    assert [w.doc for w in windows] == [0, 1, 1, 1, 2]


@pytest.mark.parametrize(("max_seq_len", "stride"), [(2, 0), (10, 8), (10, -1)])
def test_invalid_specs_are_refused(max_seq_len: int, stride: int) -> None:
    with pytest.raises(ValueError):
        WindowSpec(max_seq_len=max_seq_len, stride=stride, cls_id=1, sep_id=2)
