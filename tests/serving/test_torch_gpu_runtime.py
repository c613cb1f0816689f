"""The torch-gpu runtime (serving/runtimes/torch_gpu.py) in-process, with a stand-in for
the utilities Triton's Python-backend stub provides.

The CPU tests run everywhere. The CUDA-graph tests run where CUDA is; on the GPU device,
which has neither docq's dependencies nor a use for its conftest:

    python3 -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers \\
        tests/serving/test_torch_gpu_runtime.py
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from serving import pb_stub
from serving.pb_stub import request
from tests.support.gpu import cuda
from tests.support.tiny import reference_logits, tiny_bert

RUNTIME = Path(__file__).resolve().parents[2] / "serving" / "runtimes" / "torch_gpu.py"
LABELS = ("a", "b", "c", "d")
MAX_SEQ_LEN = 128


@pytest.fixture(scope="module")
def runtime() -> types.ModuleType:
    return pb_stub.load_runtime(RUNTIME)


@pytest.fixture(scope="module")
def version(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model version folder as `docq convert --runtime torch-gpu` lays it out."""
    folder = tmp_path_factory.mktemp("repo") / "tiny" / "1"
    return tiny_bert(folder, LABELS, hidden=64, layers=2)


def instance(runtime: types.ModuleType, version: Path, kind: str, **params: str) -> Any:
    """The transformers (padded) engine unless `engine` says otherwise."""
    params = {"max_seq_len": str(MAX_SEQ_LEN), "graph_seq_step": "32", "engine": "hf", **params}
    return pb_stub.instance(runtime, version, kind, 8, **params)


def windows(rows: int, length: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Token rows of different real lengths, padded to `length` (mask 0 on padding)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, length), dtype=np.int64)
    mask = np.zeros((rows, length), dtype=np.int64)
    for r in range(rows):
        n = int(rng.integers(2, length + 1)) if r else length
        ids[r, :n] = rng.integers(1000, 30000, n)
        ids[r, 0] = 101
        mask[r, :n] = 1
    return ids, mask


def reference(version: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    logits = reference_logits(version, ids, mask)
    assert isinstance(logits, np.ndarray)
    return logits


def test_buckets(runtime: types.ModuleType) -> None:
    assert runtime.graphs.buckets(8) == [1, 2, 4, 8]
    assert runtime.graphs.buckets(6) == [1, 2, 4, 6]
    assert runtime.graphs.buckets(1) == [1]
    assert runtime.graphs.buckets(512, 64) == [64, 128, 192, 256, 320, 384, 448, 512]
    assert runtime.graphs.buckets(100, 64) == [64, 100]


def test_batch_buckets(runtime: types.ModuleType) -> None:
    assert runtime.graphs.batch_buckets(64, 8) == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]
    assert runtime.graphs.batch_buckets(8, 8) == [1, 2, 4, 8]
    assert runtime.graphs.batch_buckets(6, 8) == [1, 2, 4, 6]
    assert runtime.graphs.batch_buckets(5, 1) == [1, 2, 3, 4, 5]
    assert runtime.graphs.batch_buckets(64, 0) == runtime.graphs.buckets(64)


def test_cpu_instance_answers_each_request_with_its_rows(
    runtime: types.ModuleType, version: Path
) -> None:
    model = instance(runtime, version, "CPU")
    assert model.graphs is None  # graphs are for GPU instances
    a, b = windows(2, 10, 1), windows(3, 17, 2)
    bad = {"input_ids": a[0], "attention_mask": b[1]}  # shapes differ: this request alone fails
    beyond = a[0].copy()
    beyond[0, 3] = model.model.config.vocab_size  # an id past the embedding: refused, not run
    responses = pb_stub.answers(
        model,
        [
            {"input_ids": a[0], "attention_mask": a[1]},
            bad,
            {"input_ids": b[0], "attention_mask": b[1]},
            {"input_ids": beyond, "attention_mask": a[1]},
        ],
    )
    assert responses[1].error is not None and "differ in shape" in responses[1].error.message
    assert responses[3].error is not None and "must lie in" in responses[3].error.message
    for refused in (responses[1], responses[3]):  # the request's fault: not to be retried
        assert refused.error.code == pb_stub.TritonError.INVALID_ARG
    for response, (ids, mask) in ((responses[0], a), (responses[2], b)):
        assert response.error is None
        (out,) = response.output_tensors
        np.testing.assert_allclose(out.array, reference(version, ids, mask), atol=1e-5)


@cuda
def test_gpu_instance_captures_a_graph_per_bucket(runtime: types.ModuleType, version: Path) -> None:
    model = instance(runtime, version, "GPU", dtype="float32")
    assert model.graphs is not None
    assert set(model.graphs.graphs) == {
        (rows, length) for rows in (1, 2, 4, 8) for length in (32, 64, 96, 128)
    }
    few = instance(runtime, version, "GPU", dtype="float32", graph_max_batch="2")
    assert few.graphs.batches == [1, 2]  # larger batches run eagerly


@cuda
@pytest.mark.parametrize(("rows", "length"), [(1, 5), (3, 32), (5, 77), (8, 128), (7, 100)])
def test_graph_replays_compute_what_the_checkpoint_computes(
    runtime: types.ModuleType, version: Path, rows: int, length: int
) -> None:
    graphs = instance(runtime, version, "GPU", dtype="float32")
    eager = instance(runtime, version, "GPU", dtype="float32", cuda_graphs="false")
    assert eager.graphs is None
    ids, mask = windows(rows, length, rows * 1000 + length)
    (got,) = pb_stub.answers(graphs, [request(ids, mask)])[0].output_tensors
    (plain,) = pb_stub.answers(eager, [request(ids, mask)])[0].output_tensors
    expected = reference(version, ids, mask)
    # padded up to a bucket and replayed: the same logits as eager, up to float rounding
    np.testing.assert_allclose(got.array, plain.array, atol=1e-4)
    np.testing.assert_allclose(got.array, expected, atol=1e-3)
    # the same buffers serve the next call of another shape without leaking rows
    small = windows(1, 9, 7)
    (again,) = pb_stub.answers(graphs, [request(*small)])[0].output_tensors
    np.testing.assert_allclose(again.array, reference(version, *small), atol=1e-3)


@cuda
@pytest.mark.parametrize(("rows", "length"), [(3, 64), (8, 128), (5, 77)])
def test_full_windows_run_eagerly_without_a_mask(
    runtime: types.ModuleType, version: Path, rows: int, length: int
) -> None:
    graphs = instance(runtime, version, "GPU", dtype="float32", graph_max_batch="2")
    rng = np.random.default_rng(rows + length)
    ids = rng.integers(1000, 30000, (rows, length), dtype=np.int64)
    mask = np.ones_like(ids)  # every row full: the eager call passes no mask
    (got,) = pb_stub.answers(graphs, [request(ids, mask)])[0].output_tensors
    np.testing.assert_allclose(got.array, reference(version, ids, mask), atol=1e-3)


@cuda
def test_fp16_graphs_keep_the_fp32_labels(runtime: types.ModuleType, version: Path) -> None:
    model = instance(runtime, version, "GPU")  # the default: float16 with graphs
    ids, mask = windows(8, 128, 11)
    (got,) = pb_stub.answers(model, [request(ids, mask)])[0].output_tensors
    expected = reference(version, ids, mask)
    assert np.abs(got.array - expected).max() < 0.05
    assert (got.array.argmax(1) == expected.argmax(1)).all()


@cuda
def test_a_batch_beyond_the_buckets_runs_eagerly(runtime: types.ModuleType, version: Path) -> None:
    model = instance(runtime, version, "GPU", dtype="float32")
    ids, mask = windows(2, MAX_SEQ_LEN + 40, 5)  # longer than any captured graph
    assert not model.graphs.fits(2, MAX_SEQ_LEN + 40)
    (got,) = pb_stub.answers(model, [request(ids, mask)])[0].output_tensors
    np.testing.assert_allclose(got.array, reference(version, ids, mask), atol=1e-3)
