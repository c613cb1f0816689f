"""The torch-gpu runtime's flat engine (serving/runtimes/flat/, kernels/): every
execute()'s real tokens in one tensor with sequence offsets, no padding.

The CPU tests run everywhere (attention per sequence, FP8 emulated). The CUDA tests run
where CUDA is (varlen flash attention, CUDA graphs per token bucket, OpenAI Triton
kernels); on the GPU device, without docq's dependencies or its conftest:

    python3 -m pytest --noconftest -p no:cacheprovider -o addopts= -p tests.tiers \\
        tests/serving/test_torch_gpu_flat.py
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from serving import pb_stub
from serving.pb_stub import request
from tests.support.gpu import cuda
from tests.support.tiny import reference_logits, tiny_bert, tiny_roberta

RUNTIME = Path(__file__).resolve().parents[2] / "serving" / "runtimes" / "torch_gpu.py"
LABELS = ("a", "b", "c", "d")
MAX_SEQ_LEN = 128


@pytest.fixture(scope="module")
def runtime() -> types.ModuleType:
    return pb_stub.load_runtime(RUNTIME)


@pytest.fixture(scope="module", params=["bert", "roberta"])
def version(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp(request.param) / "tiny" / "1"
    make = tiny_bert if request.param == "bert" else tiny_roberta
    return make(folder, LABELS, hidden=64, layers=2)


@pytest.fixture(scope="module", params=["bert", "roberta"])
def sharp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same with weights 10x BERT's init: at 0.02 a tiny model's attention is near
    uniform, and a query read from the wrong token would go unseen."""
    folder = tmp_path_factory.mktemp(request.param) / "sharp" / "1"
    make = tiny_bert if request.param == "bert" else tiny_roberta
    return make(folder, LABELS, hidden=64, layers=2, init=0.2)


def flat(runtime: types.ModuleType, version: Path, kind: str, **params: str) -> Any:
    params = {"max_seq_len": str(MAX_SEQ_LEN), "graph_seq_step": "64", **params}
    model = pb_stub.instance(runtime, version, kind, 8, **params)
    assert model.flat is not None, "a BERT-family checkpoint runs on the flat engine"
    return model


def windows(rows: int, length: int, seed: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of different real lengths, right-padded to `length` (the first row full)."""
    rng = np.random.default_rng(seed)
    ids = np.zeros((rows, length), dtype=np.int64)
    mask = np.zeros((rows, length), dtype=np.int64)
    for r in range(rows):
        n = int(rng.integers(2, length + 1)) if r else length
        ids[r, :n] = rng.integers(3, vocab, n)
        mask[r, :n] = 1
    return ids, mask


def reference(version: Path, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    logits = reference_logits(version, ids, mask)
    assert isinstance(logits, np.ndarray)
    return logits


def vocab(version: Path) -> int:
    return int(json.loads((version / "config.json").read_text())["vocab_size"])


def batch(version: Path) -> list[tuple[np.ndarray, np.ndarray]]:
    """Three requests of different lengths: one execute() runs them as one flat batch."""
    v = vocab(version)
    return [windows(3, 40, 1, v), windows(2, MAX_SEQ_LEN, 2, v), windows(1, 5, 3, v)]


def served(model: Any, requests: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    responses = pb_stub.answers(model, [request(ids, mask) for ids, mask in requests])
    for r in responses:
        assert r.error is None, r.error.message
    return [r.output_tensors[0].array for r in responses]


def test_flat_cpu_computes_what_the_padded_checkpoint_computes(
    runtime: types.ModuleType, sharp: Path
) -> None:
    model = flat(runtime, sharp, "CPU")
    requests = batch(sharp)
    for got, (ids, mask) in zip(served(model, requests), requests, strict=True):
        # positions, offsets, the last layer at first tokens only, and the first-token head
        # exactly as the padded model has them
        np.testing.assert_allclose(got, reference(sharp, ids, mask), atol=2e-5)


def test_fp8_emulated_on_cpu_keeps_the_labels(runtime: types.ModuleType, version: Path) -> None:
    model = flat(runtime, version, "CPU", dtype="fp8")
    assert model.flat.fp8
    requests = batch(version)
    for got, (ids, mask) in zip(served(model, requests), requests, strict=True):
        expected = reference(version, ids, mask)
        scale = np.abs(expected).max()
        # e4m3 keeps 3 mantissa bits: about 2^-4 relative per product, well inside the range
        assert 0 < np.abs(got - expected).max() < 0.05 * scale
        assert (got.argmax(1) == expected.argmax(1)).mean() >= 0.8


def test_fp8_products_keep_the_others_in_the_stream_dtype(
    runtime: types.ModuleType, version: Path
) -> None:
    requests = batch(version)
    outs = {}
    for products in ("all", "qkv+out+up", "qkv"):
        model = flat(runtime, version, "CPU", dtype="fp8", fp8_products=products)
        layer = model.flat.layers[0]
        got = {n for n in ("qkv", "out", "up", "down") if getattr(layer, n).fp8}
        assert got == (
            {"qkv", "out", "up", "down"} if products == "all" else set(products.split("+"))
        )
        outs[products] = served(model, requests)
    fp16 = served(flat(runtime, version, "CPU"), requests)
    for products in ("qkv+out+up", "qkv"):
        for mixed, full8, exact, (ids, mask) in zip(
            outs[products], outs["all"], fp16, requests, strict=True
        ):
            expected = reference(version, ids, mask)
            # fewer products rounded to FP8: a different result from all-FP8, and no further
            # from the checkpoint than it (FP16 where FP8 is not asked for)
            assert not np.array_equal(mixed, full8) and not np.array_equal(mixed, exact)
            assert np.abs(mixed - expected).max() < 0.05 * np.abs(expected).max()
    with pytest.raises(ValueError, match="fp8_products"):
        flat(runtime, version, "CPU", dtype="fp8", fp8_products="qkv+gelu")


def test_a_mask_that_is_not_right_padded_is_refused_alone(
    runtime: types.ModuleType, version: Path
) -> None:
    model = flat(runtime, version, "CPU")
    good = windows(2, 20, 4, vocab(version))
    holed = (good[0].copy(), good[1].copy())
    holed[1][0, 5] = 0  # a hole: a padded runtime would honour it, a flat one cannot
    empty = (good[0][:1].copy(), np.zeros_like(good[1][:1]))  # Triton's warm-up sample
    responses = pb_stub.answers(model, [request(*good), request(*holed), request(*empty)])
    assert responses[0].error is None and responses[2].error is None
    refused = responses[1]
    assert refused.error is not None and "right padding" in refused.error.message
    assert refused.error.code == pb_stub.TritonError.INVALID_ARG


def test_positions_follow_each_architecture(runtime: types.ModuleType, version: Path) -> None:
    from transformers import AutoConfig

    flat_module = runtime.flat.checkpoint
    config = AutoConfig.from_pretrained(str(version))
    ids = np.array([5, 6, 7, 8, 9, 10], dtype=np.int64)
    cu = np.array([0, 4, 6], dtype=np.int32)
    got = flat_module.positions(config, ids, cu)
    if config.model_type == "bert":
        assert got.tolist() == [0, 1, 2, 3, 0, 1]
    else:  # RoBERTa counts from pad + 1 in each sequence
        pad = config.pad_token_id
        assert got.tolist() == [pad + 1, pad + 2, pad + 3, pad + 4, pad + 1, pad + 2]
        # a padding id among the tokens: position pad, and the count skips it, as in a row
        from transformers.models.roberta.modeling_roberta import RobertaEmbeddings

        ids[1] = pad
        rows = [torch.from_numpy(ids[a:b])[None] for a, b in ((0, 4), (4, 6))]
        count = RobertaEmbeddings.create_position_ids_from_input_ids  # transformers' own
        want = [count(r, pad)[0].tolist() for r in rows]
        assert flat_module.positions(config, ids, cu).tolist() == want[0] + want[1]
        assert want[0] == [pad + 1, pad, pad + 2, pad + 3]


def test_unsupported_checkpoints_use_the_padded_engine(
    runtime: types.ModuleType, tmp_path: Path
) -> None:
    import json

    version = tiny_bert(tmp_path / "m" / "1", LABELS, hidden=32, layers=1)
    config = json.loads((version / "config.json").read_text())
    config["position_embedding_type"] = "relative_key"  # not one the flat engine runs
    (version / "config.json").write_text(json.dumps(config))
    model = pb_stub.instance(runtime, version, "CPU", 8, max_seq_len="64")
    assert model.flat is None and model.model is not None


def test_an_unknown_attention_kernel_is_refused(runtime: types.ModuleType, version: Path) -> None:
    with pytest.raises(ValueError, match="attention must be one of"):
        flat(runtime, version, "CPU", attention="fa3")


def test_cudnn_attention_that_raises_or_differs_from_flash_is_refused(
    runtime: types.ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = runtime.flat.attention
    # On a CPU cuDNN has no kernel: the check says so instead of raising.
    assert module.cudnn_refused("cpu", 4, 64, 16).startswith("cuDNN refused the call")
    monkeypatch.setattr(module, "varlen_attn", lambda q, k, v, *a: q)
    monkeypatch.setattr(module, "cudnn_dense", lambda q, k, v: q + 0.5)
    assert module.cudnn_refused("cpu", 4, 64, 16).startswith("cuDNN differs from flash by 0.5")
    monkeypatch.setattr(module, "cudnn_dense", lambda q, k, v: q + 1e-3)

    # As fast as flash, on a clock that gives every call 1 ms: timed for real on a loaded
    # CPU, one preemption in dense's 5 calls passes the 0.2 ms slack (it failed test-fast).
    def one_ms_a_call(fn: Any, device: str) -> float:
        fn()
        return 1e-3

    with monkeypatch.context() as still:
        still.setattr(module.timing, "seconds_per_call", one_ms_a_call)
        assert module.cudnn_refused("cpu", 4, 64, 16) == ""

    def slow(q: torch.Tensor, *a: Any) -> torch.Tensor:  # its ragged call on the H200: 50 ms
        time.sleep(0.01)
        return q + 1e-3

    monkeypatch.setattr(module, "cudnn_dense", slow)
    assert module.cudnn_refused("cpu", 4, 64, 16).startswith("cuDNN is slower than flash")


def test_the_triton_small_attention_falls_back_to_flash_where_it_cannot_run(
    runtime: types.ModuleType, version: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="small_attention must be one of"):
        flat(runtime, version, "CPU", small_attention="fa3")
    model = flat(runtime, version, "CPU", small_attention="triton")
    assert model.flat.small_attention == "flash"
    assert model.flat.small_attention_note == "needs CUDA and OpenAI Triton"
    module = runtime.flat.attention  # a GPU host whose kernel fails or differs is refused too
    monkeypatch.setattr(module, "varlen_attn", lambda q, k, v, *a: q)

    def fails(*a: Any) -> torch.Tensor:
        raise RuntimeError("PTX compile failed\nmore")

    for kernel, said in (
        (fails, "the Triton kernel failed: PTX compile failed"),
        (lambda q, *a: q + 0.5, "the Triton kernel differs from flash by 0.5"),
        (lambda q, *a: q + 1e-3, ""),
    ):
        monkeypatch.setattr(module, "triton_kernel", SimpleNamespace(varlen_attention=kernel))
        refused = module.triton_refused("cpu", 4, 64, 16)
        assert refused.startswith(said) if said else refused == "", refused


# OpenAI Triton's interpreter (TRITON_INTERPRET=1) runs docq's kernels on the CPU. It is
# read when triton is first imported, so the kernels run in a process of their own: one
# process for every case below (a start costs tens of seconds of imports on a busy CI box),
# on the smallest shapes that still reach every branch of each kernel.
INTERPRETED = """
import json, sys, traceback
import numpy as np, torch
import torch.nn.functional as F
from serving.runtimes.flat import attention as flat
from serving.runtimes.kernels import attention, gemm


def varlen_attention(dtype, tolerance):
    torch.manual_seed(0)
    # a window shorter than a block (and a grid row with none of its tokens: the early
    # exit), one of exactly a block, one token, one of two query and key blocks
    heads, dim, sizes = 2, 16, [5, 64, 1, 100]
    cu = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    tokens = int(cu[-1]) + 7  # a graph's bucket: tokens past the last window
    qkv = torch.randn(tokens, 3 * heads * dim).to(dtype)
    q, k, v = qkv.view(tokens, 3, heads, dim).unbind(1)
    got = attention.varlen_attention(q, k, v, torch.from_numpy(cu), 128)
    assert got.dtype == dtype, got.dtype
    want = flat.sdpa_per_window(q.float(), k.float(), v.float(), cu.tolist(), cu.tolist())
    n = int(cu[-1])
    torch.testing.assert_close(got[:n].float(), want[:n], atol=tolerance, rtol=tolerance)
    try:
        attention.varlen_attention(q[..., :12], k[..., :12], v[..., :12], cu, 128)
        return "a head width of 12 was taken"
    except ValueError as exc:
        assert "power of two" in str(exc), exc
    return f"windows {len(sizes)} max diff {float((got[:n] - want[:n]).abs().max())}"


def linear(dtype, tolerance, cases):
    Tiles = gemm.Tiles
    torch.manual_seed(0)
    rows, width, n = 77, 48, 80  # a part-full last block of rows and of columns
    x = torch.randn(rows, width).to(dtype)
    w, b = (torch.randn(n, width) * 0.2).to(dtype), torch.randn(n).to(dtype)
    exact = F.linear(x.float(), w.float(), b.float())
    tilings = {"whole": Tiles(32, 32, 16, 2, 4), "subtile": Tiles(32, 64, 16, 2, 4, subtile=True),
               "specialize": Tiles(16, 32, 32, 2, 4, specialize=True)}
    worst = 0.0
    for name, gelu in cases:
        want = F.gelu(exact, approximate="tanh") if gelu else exact
        got = gemm.linear(x, w, b, tilings[name], gelu=gelu, programs=3)  # 3 walk all blocks
        assert got.dtype == dtype and got.shape == (rows, n), (got.dtype, got.shape)
        torch.testing.assert_close(got.float(), want, atol=tolerance, rtol=tolerance)
        worst = max(worst, float((got.float() - want).abs().max()))
    big = torch.zeros(rows + 50, n, dtype=dtype)  # into rows of a larger output, no others
    gemm.linear(x[:30], w, b, tilings["whole"], out=big[40:70], programs=2)
    torch.testing.assert_close(big[40:70].float(), exact[:30], atol=tolerance, rtol=tolerance)
    assert not big[:40].any() and not big[70:].any(), "rows outside out were written"
    assert not gemm.tma_ready(x.t()) and not gemm.tma_ready(x[:, 1:])
    try:
        gemm.linear(x[:, 1:], w[:, 1:], b, tilings["whole"])
        return "a misaligned operand was taken"
    except ValueError as exc:
        assert "TMA-ready" in str(exc), exc
    return f"tilings {len({name for name, _ in cases})} max diff {worst}"


for name, dtype, tolerance, *cases in json.loads(sys.argv[1]):
    try:
        args = (getattr(torch, dtype), tolerance, *cases)
        said = (varlen_attention if name == "attention" else linear)(*args)
    except Exception:
        said = traceback.format_exc()
    print(json.dumps([name, dtype, said]))
"""
# (kernel, dtype, tolerance[, (tiling, gelu) cases]): float32, then float16, the served
# dtype with its casts; between them every tiling runs with and without the tanh GELU.
CASES = [
    ("attention", "float32", 1e-5),
    ("attention", "float16", 3e-3),
    ("linear", "float32", 1e-5, [("whole", True), ("subtile", False), ("specialize", True)]),
    ("linear", "float16", 4e-3, [("whole", False), ("subtile", True), ("specialize", False)]),
]


@pytest.fixture(scope="module")
def interpreted() -> dict[tuple[str, str], str]:
    """What each case of INTERPRETED said, run through OpenAI Triton's interpreter on the CPU."""
    pytest.importorskip("triton")
    numpy = tuple(int(part) for part in importlib.metadata.version("numpy").split(".")[:2])
    if numpy >= (2, 4):  # the H200's own Python has 2.4; docq pins numpy < 2
        pytest.skip("Triton 3.6's interpreter fails under numpy >= 2.4 (triton-lang/triton#9171)")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", INTERPRETED, json.dumps(CASES)],
        env=env, cwd=RUNTIME.parents[2], capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("[")]
    return {(name, dtype): text for name, dtype, text in said}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_triton_varlen_attention_kernel_computes_each_window_alone(
    interpreted: dict[tuple[str, str], str], dtype: str
) -> None:
    """kernels/attention.py's varlen_attention through OpenAI Triton's interpreter, on the
    CPU in float32 and in float16 (the served dtype, with its casts): windows shorter and
    longer than a block, of exactly one, of one token, and rows past the last window,
    against PyTorch's attention one window at a time; a head width it cannot tile refused."""
    said = interpreted["attention", dtype]
    assert said.startswith("windows 4 max diff"), said


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_triton_gemm_computes_the_product_bias_and_gelu(
    interpreted: dict[tuple[str, str], str], dtype: str
) -> None:
    """kernels/gemm.py's linear through OpenAI Triton's interpreter: each kind of tiling
    (whole and split epilogue, loads in warps of their own), with and without the tanh GELU
    (CASES: each tiling both ways across the two dtypes), rows and columns that do not fill
    the last block, fewer programs than blocks (the persistent walk), the product written
    into rows of a larger tensor, and operands TMA cannot read refused."""
    said = interpreted["linear", dtype]
    assert said.startswith("tilings 3 max diff"), said


def test_the_gemm_plan_keeps_docqs_gemm_only_where_it_is_faster(
    runtime: types.ModuleType, version: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gemm_plan's choices, with a stand-in for the kernels and the clock: tilings that
    fail or differ are dropped, the fastest is kept down to the rows where it stops
    beating cuBLAS, and the products then run it for those rows only."""
    plan, products, timing = runtime.flat.gemm_plan, runtime.flat.products, runtime.flat.timing
    with pytest.raises(ValueError, match="gemm must be one of"):
        flat(runtime, version, "CPU", gemm="cutlass")
    model = flat(runtime, version, "CPU", gemm="triton")
    said = "needs CUDA, OpenAI Triton and FP16 or BF16"
    assert (model.flat.gemm, model.flat.gemm_note) == ("cublas", said)
    assert model.flat.plan_gemms(1 << 16) == []

    fails, differs, fast = "fails", "differs", "fast"
    ran: list[int] = []

    def linear(x: Any, w: Any, b: Any, tiles: str, gelu: bool = False, out: Any = None) -> Any:
        if tiles == fails:
            raise RuntimeError("PTX compile failed\nmore")
        ran.append(x.shape[0])
        y = F.linear(x, w, b)
        return (F.gelu(y, approximate="tanh") if gelu else y) + (1.0 if tiles == differs else 0)

    kernels = SimpleNamespace(
        TILINGS=(fails, differs, fast), linear=linear, tma_ready=lambda t: True
    )
    monkeypatch.setattr(plan, "gemm", kernels)
    monkeypatch.setattr(products, "gemm", kernels)
    cublas_ms = {32768: 1.0, 16384: 0.5, 8192: 0.25}

    def clock(ours: dict[int, float]) -> Any:
        def seconds(fn: Any, device: str, calls: int = 5) -> float:
            *tiles, rows = fn.args
            return (ours[rows] if tiles else cublas_ms[rows]) / 1e3

        return seconds

    gen = torch.Generator().manual_seed(0)
    one = products.Linear(torch.randn(6, 4, generator=gen), torch.randn(6, generator=gen),
                        torch.float32, False)  # fmt: skip
    monkeypatch.setattr(timing, "seconds_per_call", clock({32768: 0.8, 16384: 0.45, 8192: 0.3}))
    tiles, fewest, note = plan.gemm_plan(one, False, 32768, "cpu")
    assert (tiles, fewest) == (fast, 16384), note
    assert note.startswith("docq's fast, 0.800 ms against cuBLAS's 1.000 at 32768 tokens"), note
    assert "fails PTX compile failed" in note and "differs differs from cuBLAS by 1" in note
    one.tiles, one.min_tokens = tiles, fewest
    x = torch.randn(16384, 4, generator=gen)
    ran.clear()
    torch.testing.assert_close(one(x), F.linear(x, one.weight, one.bias))
    torch.testing.assert_close(one(x[:9000]), F.linear(x[:9000], one.weight, one.bias))
    assert ran == [16384], "docq's GEMM ran for the large call only"
    monkeypatch.setattr(timing, "seconds_per_call", clock({32768: 0.99}))
    tiles, fewest, note = plan.gemm_plan(one, True, 32768, "cpu")  # planned anew: cuBLAS
    assert (tiles, fewest, one.tiles) == (None, 0, None)
    assert note.startswith("cuBLAS: docq's best, fast, 0.990 ms against cuBLAS's 1.000"), note
    assert plan.gemm_plan(one, False, 8000, "cpu")[2] == "cuBLAS: no batch reaches 8192 tokens"
    lucky = iter([0.5] + [1.02] * 20)  # docq's GEMM: one lucky call, then 2% slower each time

    def noisy(fn: Any, device: str, calls: int = 5) -> float:
        *tiles, rows = fn.args
        return (next(lucky) if tiles else cublas_ms[rows]) / 1e3

    monkeypatch.setattr(timing, "seconds_per_call", noisy)
    tiles, fewest, note = plan.gemm_plan(one, False, 32768, "cpu")  # the rounds decide
    assert tiles is None and note.startswith("cuBLAS: docq's best, fast, 1.020 ms"), note


def test_full_first_lays_out_the_full_windows_first_and_keeps_the_order(
    runtime: types.ModuleType,
) -> None:
    full_first = runtime.flat.attention.full_first
    sizes = [3, 4, 2, 4, 1]
    cu = np.cumsum([0, *sizes]).astype(np.int32)
    ids = np.arange(int(cu[-1])) + 100
    got_ids, got_cu, order, dense = full_first(ids, cu, 4)
    assert dense == 2
    assert np.diff(got_cu).tolist() == [4, 4, 3, 2, 1]  # the full ones, then the rest in order
    assert got_ids.tolist() == [*ids[3:7], *ids[9:13], *ids[0:3], *ids[7:9], ids[13]]
    # window i of the request is laid out at order[i]: its tokens are where it went
    for i in range(len(sizes)):
        j = order[i]
        assert got_ids[got_cu[j] : got_cu[j + 1]].tolist() == ids[cu[i] : cu[i + 1]].tolist()
    for already in ([4, 4, 1], [4, 4], [2, 3]):  # nothing to move: the arrays come back
        c = np.cumsum([0, *already]).astype(np.int32)
        i = np.arange(int(c[-1]))
        same_ids, same_cu, same_order, n = full_first(i, c, 4)
        assert same_ids is i and same_cu is c and same_order.tolist() == list(range(len(already)))
        assert n == sum(1 for a in already if a == 4)


def test_cudnn_blocks_and_first_token_attention_compute_the_checkpoint(
    runtime: types.ModuleType, sharp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GPU path's layout on a CPU, with each kernel's maths in SDPA: full windows laid out
    first and run as one block, the rest through the varlen call, the last layer's queries at
    each window's first token only, and the logits back in the request's order."""
    module, model = runtime.flat.attention, flat(runtime, sharp, "CPU")
    blocks: list[tuple[int, ...]] = []

    def dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        blocks.append(tuple(q.shape))
        return F.scaled_dot_product_attention(q, k, v)

    def varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor,
               cu_k: torch.Tensor, *_: Any) -> torch.Tensor:  # fmt: skip
        return module.sdpa_per_window(q, k, v, cu_q.tolist(), cu_k.tolist())

    monkeypatch.setattr(module, "varlen_attn", varlen)
    monkeypatch.setattr(module, "cudnn_dense", dense)
    monkeypatch.setattr(model.flat, "varlen", True)
    monkeypatch.setattr(model.flat, "attention", "cudnn")
    requests = batch(sharp)  # the second request's first window is a full one
    for got, (ids, mask) in zip(served(model, requests), requests, strict=True):
        np.testing.assert_allclose(got, reference(sharp, ids, mask), atol=2e-5)
    full = sum(int((m.sum(1) == MAX_SEQ_LEN).sum()) for _, m in requests)
    heads = model.flat.heads
    layers = len(model.flat.layers)
    assert full and blocks == [(full, heads, MAX_SEQ_LEN, 64 // heads)] * (layers - 1)
    # inside a graph no cuDNN call is made
    width = model.flat.config.hidden_size
    qkv, cu = torch.zeros((8, 3 * width)), torch.tensor([0, 4, 8], dtype=torch.int32)
    blocks.clear()
    monkeypatch.setattr(model.flat, "dense_len", 4)
    for graphed, calls in ((True, []), (False, [(2, heads, 4, width // heads)])):
        pieces = model.flat._attention(qkv, cu, None, 4, graphed, dense=2)
        assert [p.shape for p in pieces] == [(8, width)] and blocks == calls


def test_a_small_batch_replays_in_the_smallest_graph_that_holds_it(
    runtime: types.ModuleType,
) -> None:
    assert runtime.graphs.window_capacities(8, 64) == [8, 64]
    assert runtime.graphs.window_capacities(8, 8) == runtime.graphs.window_capacities(16, 8) == [8]
    assert runtime.graphs.window_capacities(0, 4) == [1, 4]
    graphs = SimpleNamespace(buckets=[64, 128, 192], capacities=[2, 8])
    pick = functools.partial(runtime.graphs.TokenGraphs.graph_for, graphs)
    assert pick(64, 1) == (64, 2) and pick(65, 2) == (128, 2)
    assert pick(100, 3) == (128, 8) and pick(192, 8) == (192, 8)


# --- on a GPU ------------------------------------------------------------------------------


@cuda
def test_cudnn_attention_serves_what_flash_serves(runtime: types.ModuleType, version: Path) -> None:
    reference_model = flat(runtime, version, "GPU", cuda_graphs="false")
    eager = flat(runtime, version, "GPU", attention="cudnn", cuda_graphs="false")
    # cuDNN runs the eager batches; the graphs of small batches are captured with flash.
    graphs = flat(runtime, version, "GPU", attention="cudnn", graph_max_batch="2")
    assert graphs.graphs is not None
    for model in (eager, graphs):  # torch 2.11 on the H200: correct, but 50 ms a call
        note = model.flat.attention_note
        assert model.flat.attention == "cudnn" or note.startswith("cuDNN is slower"), note
    small = [windows(3, 40, 11, vocab(version))]
    for requests in (small, batch(version)):
        want = served(reference_model, requests)
        for model in (eager, graphs):
            for got, w in zip(served(model, requests), want, strict=True):
                np.testing.assert_allclose(got, w, atol=2e-2)
                assert (got.argmax(1) == w.argmax(1)).all()


@cuda
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_graphs_per_token_bucket_match_eager_and_the_checkpoint(
    runtime: types.ModuleType, version: Path, dtype: str
) -> None:
    graphs = flat(runtime, version, "GPU", dtype=dtype, graph_max_batch="2")
    eager = flat(runtime, version, "GPU", dtype=dtype, cuda_graphs="false")
    assert eager.graphs is None
    # multiples of 64 tokens up to graph_max_batch x max_seq_len, for 2 windows and for 8
    assert sorted(graphs.graphs.graphs) == [(t, w) for t in (64, 128, 192, 256) for w in (2, 8)]
    small = [windows(3, 40, 11, vocab(version))]  # 3 windows, at most 120 tokens: 8-window graph
    two = [windows(2, 100, 12, vocab(version))]  # at most 200 tokens: the 2-window graph
    large = batch(version)  # past 256 tokens: eager
    for requests in (small, two, large, small, two):  # the buffers leak nothing between calls
        for g, e, (ids, mask) in zip(
            served(graphs, requests), served(eager, requests), requests, strict=True
        ):
            expected = reference(version, ids, mask)
            np.testing.assert_allclose(g, e, atol=2e-2)
            assert np.abs(g - expected).max() < 0.05
            assert (g.argmax(1) == expected.argmax(1)).all()


@cuda
def test_tanh_gelu_and_fp8_stay_near_the_checkpoint(
    runtime: types.ModuleType, version: Path
) -> None:
    requests = batch(version)
    for params, tolerance in (
        ({"gelu": "tanh"}, 0.05),
        ({"dtype": "fp8"}, 0.15),
        ({"dtype": "fp8", "fp8_products": "qkv+out+up"}, 0.15),
        ({"dtype": "fp8", "fp8_products": "out+down"}, 0.15),
    ):
        model = flat(runtime, version, "GPU", **params)
        for got, (ids, mask) in zip(served(model, requests), requests, strict=True):
            expected = reference(version, ids, mask)
            assert np.abs(got - expected).max() < tolerance * max(1.0, np.abs(expected).max())


@cuda
def test_triton_small_attention_in_the_graphs_serves_what_flash_serves(
    runtime: types.ModuleType, version: Path
) -> None:
    flash = flat(runtime, version, "GPU", graph_max_batch="2")
    model = flat(runtime, version, "GPU", graph_max_batch="2", small_attention="triton")
    assert model.flat.small_attention == "triton", model.flat.small_attention_note
    small = [windows(3, 40, 11, vocab(version))]  # the 8-window graph
    two = [windows(2, 100, 12, vocab(version))]  # the 2-window graph
    for requests in (small, two, batch(version), small):  # the eager batch keeps flash
        for got, want, (ids, mask) in zip(
            served(model, requests), served(flash, requests), requests, strict=True
        ):
            np.testing.assert_allclose(got, want, atol=2e-2)
            assert (got.argmax(1) == reference(version, ids, mask).argmax(1)).all()


@cuda
def test_triton_gemm_serves_what_cublas_serves(runtime: types.ModuleType, version: Path) -> None:
    """docq's GEMM on the GPU: every tiling that compiles here computes RoBERTa-large's
    products as cuBLAS does (one at least must), and an encoder whose products all run it
    gives cuBLAS's logits on a batch past GEMM_MIN_TOKENS."""
    kernels, module = runtime.flat.gemm_plan.gemm, runtime.flat
    torch.manual_seed(0)
    x = torch.randn(8192 + 77, 1024, device="cuda", dtype=torch.float16)
    w = torch.randn(3072, 1024, device="cuda", dtype=torch.float16) * 0.03
    b = torch.randn(3072, device="cuda", dtype=torch.float16)
    want = F.linear(x, w, b).float()
    compiled = []
    for tiles in kernels.TILINGS:
        try:
            got = kernels.linear(x, w, b, tiles)
        except Exception:  # a tiling this GPU's compiler refuses: gemm_plan drops it too
            continue
        torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=1e-2)
        gelu = kernels.linear(x, w, b, tiles, gelu=True).float()
        torch.testing.assert_close(gelu, F.gelu(want, approximate="tanh"), atol=2e-2, rtol=1e-2)
        compiled.append(tiles)
    assert compiled, "no tiling compiled"
    model = flat(runtime, version, "GPU", gemm="triton")
    notes = model.flat.plan_gemms(1 << 14)
    assert [n.split(":")[0] for n in notes] == ["qkv", "out", "up", "down"], notes
    cublas = flat(runtime, version, "GPU")
    for layer in model.flat.layers:  # docq's GEMM everywhere, whatever the plan chose
        for product in module.products.PRODUCTS:
            linear = getattr(layer, product)
            linear.tiles, linear.min_tokens = compiled[0], module.gemm_plan.GEMM_MIN_TOKENS
    count, length = 70, MAX_SEQ_LEN  # 8,960 tokens
    ids = np.random.default_rng(0).integers(3, vocab(version), count * length)
    cu = np.arange(0, count * length + 1, length, dtype=np.int32)
    pos = module.checkpoint.positions(model.flat_config, ids, cu)
    args = [torch.from_numpy(a).cuda() for a in (ids, pos, cu, np.arange(count))]
    got = model.flat.forward(*args, length)
    want = cublas.flat.forward(*args, length)
    torch.testing.assert_close(got, want, atol=2e-2, rtol=1e-2)


@cuda
def test_kernels_compute_what_pytorch_computes(runtime: types.ModuleType) -> None:
    kernels, flat_module = runtime.flat.encoder.rowwise, runtime.flat.products
    assert kernels is not None, "OpenAI Triton is on every CUDA host docq serves from"
    torch.manual_seed(0)
    y, r = (torch.randn(300, 1024, device="cuda", dtype=torch.float16) for _ in range(2))
    w, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    out, out8, scale = kernels.add_layernorm(y, r, w, b, 1e-5, torch.float16, fp8=True)
    expected = torch.nn.functional.layer_norm((y.float() + r.float()), (1024,), w, b, 1e-5)
    torch.testing.assert_close(out.float(), expected, atol=2e-2, rtol=1e-2)
    want8, want_scale = flat_module.quantize_rows(out)
    torch.testing.assert_close(scale, want_scale)
    torch.testing.assert_close(
        out8.float() * scale, want8.float() * want_scale, atol=0.1, rtol=0.07
    )
    h = torch.randn(300, 4096, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
    g8, g_scale = kernels.gelu_quantize(h, bias)
    exact = torch.nn.functional.gelu(h.float() + bias.float())
    torch.testing.assert_close(g8.float() * g_scale, exact, atol=0.1, rtol=0.07)


def test_overlap_answers_each_request_through_its_sender(
    runtime: types.ModuleType, version: Path
) -> None:
    """execute() returns None and the responder's thread sends each request's one final
    response: the rows a synchronous instance returns, a bad request refused alone."""
    overlapped = flat(runtime, version, "CPU", overlap="true")
    plain = flat(runtime, version, "CPU")
    assert overlapped.responder is not None and plain.responder is None  # CPU: off by default
    good = batch(version)
    beyond = (good[0][0].copy(), good[0][1])
    beyond[0][0, 1] = vocab(version)  # past the embedding: refused before the run
    requests = [request(*good[0]), request(*beyond), request(*good[1]), request(*good[2])]
    assert overlapped.execute(requests) is None
    answers = [r.answer() for r in requests]
    assert answers[1].error is not None and answers[1].error.code == pb_stub.TritonError.INVALID_ARG
    expected = served(plain, good)
    for got, want in zip([answers[0], *answers[2:]], expected, strict=True):
        assert got.error is None, got.error.message
        np.testing.assert_allclose(got.output_tensors[0].array, want, atol=1e-6)
    overlapped.finalize()
    assert not overlapped.responder._thread.is_alive()  # finalize stops the thread


def test_the_responder_holds_at_most_depth_batches_and_fails_a_failed_run(
    runtime: types.ModuleType,
) -> None:
    """execute() launches its batch, then returns only once the batch before it is answered
    (so that Triton forms the next batch late, from more requests), never with more than two
    in flight; logits a run returns as such, or its error, are answered in execute() itself
    and give their slot back; logits that cannot be read fail every request of their batch
    (INTERNAL), and the next batch runs."""
    responder = runtime.Responder(depth=2)
    gates: list[Any] = []

    def run(ids: np.ndarray, mask: np.ndarray) -> Any:
        if ids[0, 0] == 7:
            raise RuntimeError("the GPU fell over")
        if ids[0, 0] == 6:  # ready at once: no function to wait on
            return ids[:, :2].astype(np.float32)
        gate = threading.Event()
        gates.append(gate)
        logits = ids[:, :2].astype(np.float32)

        def wait() -> np.ndarray:
            if not gate.wait(10):
                raise TimeoutError("never released")
            if ids[0, 0] == 8:
                raise RuntimeError("the copy back failed")
            return logits

        return wait

    def batch_of(first: int) -> Any:
        ids = np.full((2, 3), first, dtype=np.int64)
        return request(ids, np.ones_like(ids))

    def go(r: Any) -> None:
        assert runtime.execute([r], run, "test", responder=responder) is None

    def launched(r: Any, kernels: int) -> threading.Thread:
        """execute(r) in a thread: its batch on the GPU, the call waiting for the one before."""
        thread = threading.Thread(target=go, args=(r,))
        thread.start()
        until = time.monotonic() + 5
        while len(gates) < kernels and time.monotonic() < until:
            time.sleep(0.01)
        time.sleep(0.1)
        assert len(gates) == kernels and thread.is_alive()
        return thread

    a, b, c = batch_of(1), batch_of(2), batch_of(3)
    go(a)  # nothing before it: returns at once
    second = launched(b, 2)  # two in flight; execute() waits for the first
    gates[0].set()
    assert a.answer().output_tensors[0].array.tolist() == [[1, 1], [1, 1]]
    second.join(5)
    assert not second.is_alive()
    third = launched(c, 3)  # a's slot came back: c runs beside b, and waits for it
    gates[1].set()
    third.join(5)
    assert not third.is_alive()
    gates[2].set()
    assert b.answer().output_tensors[0].array[0, 0] == 2
    assert c.answer().output_tensors[0].array[0, 0] == 3
    for first, message in ((7, "fell over"), (6, None)):  # 3 each: their slots came back
        for _ in range(3):
            (answered,) = runtime.execute([batch_of(first)], run, "test", responder=responder)
            if message is None:
                assert answered.error is None and answered.output_tensors[0].array[0, 0] == 6
            else:
                assert answered.error.code == pb_stub.TritonError.INTERNAL
                assert message in answered.error.message
    unread = batch_of(8)
    go(unread)
    gates[-1].set()
    error = unread.answer().error
    assert error is not None and error.code == pb_stub.TritonError.INTERNAL
    assert "copy back failed" in error.message
    after = batch_of(4)
    go(after)
    gates[-1].set()
    assert after.answer().output_tensors[0].array[0, 0] == 4
    responder.close()


@cuda
def test_batches_in_flight_keep_their_own_inputs_and_logits(
    runtime: types.ModuleType, version: Path
) -> None:
    """Back to back on the GPU with overlap (the default): an eager batch's execute()
    returns while it runs and the next stages and runs meanwhile, a graph's (one output
    buffer) answers at once behind them, and every answer is the one its own batch
    computes alone."""
    model = flat(runtime, version, "GPU", graph_max_batch="2")  # FP16: graphs need flash
    plain = flat(runtime, version, "GPU", graph_max_batch="2", overlap="false")
    assert model.responder is not None and plain.responder is None
    assert model.graphs is not None
    v = vocab(version)
    rng = np.random.default_rng(0)

    def full(rows: int, length: int) -> tuple[np.ndarray, np.ndarray]:
        ids = rng.integers(3, v, (rows, length), dtype=np.int64)
        return ids, np.ones_like(ids)

    # graphs hold up to 256 tokens here: (1, 40), (2, 100), (1, 7), (2, 64) replay one;
    # 384 and 385 full tokens run eagerly
    cases = [
        case
        for seed in range(4)
        for case in (
            windows(1, 40, seed, v), windows(2, 100, seed, v), full(3, MAX_SEQ_LEN),
            windows(1, 7, seed, v), full(5, 77), windows(2, 64, seed, v),
        )
    ]  # fmt: skip
    requests = [request(*case) for case in cases]
    returned = [model.execute([r]) for r in requests]
    eager = {i for i in range(len(cases)) if i % 6 in (2, 4)}
    assert {i for i, answer in enumerate(returned) if answer is None} == eager  # answered later
    for r, answer, case in zip(requests, returned, cases, strict=True):
        got = r.answer() if answer is None else answer[0]
        assert got.error is None, got.error.message
        (want,) = served(plain, [case])
        # the same kernels on the same rows: equal but for FP16 rounding, where a batch
        # that read another's inputs or logits would be off by whole logits
        np.testing.assert_allclose(got.output_tensors[0].array, want, atol=2e-3)
