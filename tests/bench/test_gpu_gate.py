"""bench/gpu/gate.py with no server: the gate's requests of every size, and the mark a
result gets from its gate's commit."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bench.gpu import gate
from conversion import parity


def test_a_batch_goes_as_requests_of_the_size_each_cut_to_its_longest_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[tuple[int, int]] = []

    def runner(url: str, model: str) -> object:
        def run(batch: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
            ids, _ = batch
            sent.append(ids.shape)
            return ids[:, :1].astype(np.float32) * 10  # a logit that names its window

        return run

    monkeypatch.setattr(parity, "triton_runner", runner)
    lengths = [9, 9, 7, 7, 7, 3, 2, 1, 1, 1]
    mask = np.array([[1] * n + [0] * (9 - n) for n in lengths])
    ids = np.arange(10)[:, None] * mask
    for text, calls in (("1", 10), ("3", 4), ("8", 2), ("128", 1), ("4x3", 3)):
        sent.clear()
        size, in_flight = gate.parse_size(text)
        got = gate.chunked("u", "m", size, in_flight)((ids, mask))
        assert got[:, 0].tolist() == [10.0 * i for i in range(10)], text  # in order
        assert len(sent) == calls and max(rows for rows, _ in sent) == min(size, 10)
    assert sorted(sent) == sorted([(4, 9), (4, 7), (2, 1)])  # each cut to its own longest


def test_a_result_gated_at_another_commit_is_marked(tmp_path: Path) -> None:
    tree = "HEAD {}\nchanged from it when packed or run:\n{}"
    (tmp_path / "gate.json").write_text(
        json.dumps({"tree": tree.format("aaa", ""), "passed": True})
    )
    same, other, dirty = (tmp_path / f"{n}.json" for n in ("same", "other", "dirty"))
    same.write_text(json.dumps({"tree": tree.format("aaa", "")}))
    other.write_text(json.dumps({"tree": tree.format("bbb", "")}))
    dirty.write_text(json.dumps({"tree": tree.format("aaa", " M bench/gpu/serve.py")}))
    lines = gate.mark(tmp_path / "gate.json", [same, other, dirty])
    assert json.loads(same.read_text())["gate"]["same_commit"] is True
    assert json.loads(other.read_text())["gate"]["note"] == (
        "MARKED: the gate ran at aaa, this run at bbb"
    )
    assert json.loads(dirty.read_text())["gate"]["same_commit"] is False
    assert len(lines) == 3 and "gated at this commit" in lines[0]
