"""bench/gpu/gate.py and parity_parts.py with no server: the gate's requests of every size,
the mark a result gets from its gate's commit, and the models' parts joined back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from bench.gpu import gate, parity_parts
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
    tree = "HEAD {}\nchanged from it when packed:\n{}"
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


def test_the_models_travel_in_parts_and_come_back_whole(tmp_path: Path) -> None:
    root, stash = tmp_path / "parity", tmp_path / "stash"
    shared = torch.randn(64, 32)
    for name, own in (("a", torch.randn(8)), ("b", torch.randn(8))):
        (root / name).mkdir(parents=True)
        save_file({"shared": shared, "own": own}, str(root / name / "pruned.safetensors"))
        (root / name / "config.json").write_text(name)
    whole_b = load_file(str(root / "b" / "pruned.safetensors"))
    assert parity_parts.dedupe(root / "a", root / "b") == shared.numel() * 4
    assert set(load_file(str(root / "b" / "pruned.safetensors"))) == {"own"}
    pieces = parity_parts.split(root, ["a", "b"], first_bytes=6000)
    (stash / "parts").mkdir(parents=True)
    n = len(pieces)
    assert n > 1 and all(p.stat().st_size <= 6000 for p in pieces)
    for piece in pieces[:-1]:
        (stash / "parts" / piece.name).write_bytes(piece.read_bytes())
    assert parity_parts.join(stash) == [f"part {n} of {n}"]  # said plainly, nothing unpacked
    assert not (stash / "a").exists()
    (stash / "parts" / pieces[-1].name).write_bytes(pieces[-1].read_bytes())
    assert parity_parts.join(stash) == []
    back = load_file(str(stash / "b" / "pruned.safetensors"))
    assert set(back) == set(whole_b) and all(torch.equal(back[k], whole_b[k]) for k in back)
    assert (stash / "a" / "config.json").read_text() == "a"
