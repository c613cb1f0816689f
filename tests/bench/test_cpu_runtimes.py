"""bench/cpu_runtimes.py: every variant runs the same batches, in an order rotated per round."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import cpu_runtimes
from conversion import convert
from docq.text.packing import Batch

TOKENIZER = Path(__file__).resolve().parents[2] / "model_repository" / "doc-type" / "tokenizer"


def test_every_round_runs_every_variant_over_the_same_batches() -> None:
    batches = cpu_runtimes.batches_of(6, 1, TOKENIZER, 8)
    calls: list[tuple[str, int]] = []

    def variant(name: str) -> cpu_runtimes.Run:
        def run(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            calls.append((name, ids.shape[0]))
            return np.zeros((ids.shape[0], 2), dtype=np.float32)

        return run

    seconds = cpu_runtimes.measure({n: variant(n) for n in "abc"}, batches, rounds=3)
    assert {n: len(s) for n, s in seconds.items()} == {"a": 3, "b": 3, "c": 3}
    timed = calls[3:]  # after one warm-up call each
    firsts = [timed[r * 3 * len(batches)][0] for r in range(3)]
    assert firsts == ["a", "b", "c"]  # the order rotates: no variant always goes first
    for name in "abc":
        rows = [n for v, n in timed if v == name]
        assert rows == [len(b.rows) for b in batches] * 3


def test_batches_are_the_packers_within_the_served_limits() -> None:
    batches: list[Batch] = cpu_runtimes.batches_of(20, 2, TOKENIZER, 8)
    assert all(len(b.rows) <= 8 and b.input_ids.shape[1] <= 512 for b in batches)
    assert sorted(r for b in batches for r in b.rows) == list(
        range(sum(len(b.rows) for b in batches))
    )


@pytest.mark.parametrize(
    "target",
    [
        convert.Target("tiny", max_seq_len=128, threads=1, fuse=True),
        convert.Target("tiny", "openvino-cpu", max_seq_len=128, threads=1),
    ],
    ids=["onnx-cpu-fused", "openvino-cpu"],
)
@pytest.mark.build
def test_variants_run_the_runtimes_own_code(
    tiny_checkpoint: Path, tmp_path: Path, target: convert.Target
) -> None:
    staged = convert.stage(tiny_checkpoint, target, tmp_path / "m")
    run = cpu_runtimes.served(staged.folder, "fp32", 1)
    torch = cpu_runtimes.torch_eager(tiny_checkpoint, 1)
    ids, mask = convert.sample_batches(30522, 128, seed=3)[3]
    np.testing.assert_allclose(run(ids, mask), torch(ids, mask), atol=1e-4)


def test_speeds_are_pooled_as_same_round_ratios() -> None:
    def report(base: list[float], other: list[float]) -> dict[str, object]:
        return {
            "variants": {
                "onnx-cpu": {"seconds_per_round": base},
                "x": {"seconds_per_round": other},
            }
        }

    # A loaded round slows both alike: the ratio stays 2 although the medians would not.
    pooled = cpu_runtimes.summarise([report([10, 40], [5, 20]), report([100], [50])])
    assert pooled["x"] == {"rounds": 3, "speed_vs_onnx-cpu_median": 2.0, "min": 2.0, "max": 2.0}
    assert pooled["onnx-cpu"]["speed_vs_onnx-cpu_median"] == 1.0
