"""docq's GEMM or cuBLAS, chosen at load for each of a layer's matrix products.

`gemm` picks the large batches' matrix products: `cublas` (F.linear, cuBLASLt with the bias
and the tanh GELU in its epilogue) or `triton`: kernels/gemm.py's linear, a persistent TMA
GEMM, timed against cuBLAS at load for each of a layer's four products and each of its
tilings (`gemm_plan`), and kept per product where it is faster at the largest batch, for
batches of as many tokens down to where it stops being faster (never under
GEMM_MIN_TOKENS: the small batches' graphs keep cuBLAS); cuBLAS elsewhere, the reasons in
the server's log.
"""

from __future__ import annotations

import functools
import statistics
from typing import Any

import torch

from . import timing
from .products import Linear

try:  # docq's GEMM: CUDA hosts with OpenAI Triton
    from ..kernels import gemm
except ImportError:  # pragma: no cover - depends on the host
    gemm = None  # type: ignore[assignment]

GEMMS = ("cublas", "triton")
GEMM_MIN_TOKENS = 8192  # docq's GEMM never runs fewer rows: the graphs' batches keep cuBLAS
GEMM_GAIN = 0.97  # it must take at most this share of cuBLAS's time to be kept
GEMM_ROUNDS = 5  # docq's GEMM and cuBLAS timed in turn this often: the median ratio decides


def _ratio(ours: Any, theirs: Any, device: str) -> tuple[float, float, float]:
    """docq's time over cuBLAS's as the median of GEMM_ROUNDS rounds that time each in turn,
    so that one noisy call decides nothing (on an H100 a single timing had docq's GEMM 10%
    faster at a product where 20 repeats had it 8% slower); and each one's median time."""
    a, b = [], []
    for _ in range(GEMM_ROUNDS):
        a.append(timing.seconds_per_call(ours, device, 20))
        b.append(timing.seconds_per_call(theirs, device, 20))
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return statistics.median(ratios), statistics.median(a), statistics.median(b)


def gemm_plan(linear: Linear, gelu: bool, tokens: int, device: str) -> tuple[Any, int, str]:
    """docq's GEMM for `linear`'s product where it beats cuBLAS here: (its tiles, the fewest
    rows it runs for, what was measured), or (None, 0, why cuBLAS stays).

    Each tiling of kernels/gemm.py's TILINGS runs once at `tokens` rows and once at a ragged
    count, and is dropped where it fails (a compiler or launch error) or differs from
    cuBLAS; the fastest at `tokens` is kept if it takes at most GEMM_GAIN of cuBLAS's time
    (the median of GEMM_ROUNDS alternating rounds), then compared so at half as many rows,
    and half again, down to GEMM_MIN_TOKENS: it runs for as few rows as it stayed faster."""
    if tokens < GEMM_MIN_TOKENS:
        return None, 0, f"cuBLAS: no batch reaches {GEMM_MIN_TOKENS} tokens"
    linear.tiles = None  # cuBLAS while it is measured
    gen = torch.Generator(device=device).manual_seed(0)
    width = linear.weight.shape[1]
    x = torch.randn((tokens, width), generator=gen, device=device).to(linear.weight.dtype)

    def cublas(rows: int) -> torch.Tensor:  # the tiles are set only once this returns
        return linear.gelu_tanh(x[:rows]) if gelu else linear(x[:rows])

    def own(tiles: Any, rows: int) -> torch.Tensor:
        return gemm.linear(x[:rows], linear.weight, linear.bias, tiles, gelu)  # type: ignore[no-any-return]

    timed: dict[Any, float] = {}
    dropped: list[str] = []
    for tiles in gemm.TILINGS:
        try:
            for rows in (tokens, tokens - 77):  # the last row block part-full
                want = cublas(rows).float()
                diff = float((own(tiles, rows).float() - want).abs().max())
                if not diff <= 1e-2 * max(1.0, float(want.abs().max())):
                    raise ArithmeticError(f"differs from cuBLAS by {diff:.3g}")
        except Exception as exc:  # a compiler or launch failure, or wrong sums
            dropped.append(f"{tiles} {str(exc).splitlines()[0][:120]}")
            continue
        timed[tiles] = timing.seconds_per_call(functools.partial(own, tiles, tokens), device, 20)
    said = f" (dropped: {'; '.join(dropped)})" if dropped else ""
    if not timed:
        return None, 0, f"cuBLAS: no tiling ran{said}"
    best = min(timed, key=timed.__getitem__)

    def against(rows: int) -> tuple[float, float, float]:
        return _ratio(functools.partial(own, best, rows), functools.partial(cublas, rows), device)

    ratio, ours, base = against(tokens)
    measured = f"{ours * 1e3:.3f} ms against cuBLAS's {base * 1e3:.3f} at {tokens} tokens"
    if ratio > GEMM_GAIN:
        return None, 0, f"cuBLAS: docq's best, {best}, {measured}{said}"
    fewest, rows = tokens, tokens // 2
    while rows >= GEMM_MIN_TOKENS and against(rows)[0] <= GEMM_GAIN:
        fewest, rows = rows, rows // 2
    return best, fewest, f"docq's {best}, {measured}, from {fewest} tokens{said}"
