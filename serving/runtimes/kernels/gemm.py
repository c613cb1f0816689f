"""`linear`: `x @ W.T + b` (and the FFN's tanh GELU) as a persistent GEMM: one program per
SM walks the output tiles, its operands brought in by TMA, so one tile's epilogue runs
while the next tile's loads are in flight. For the large batches' K = 1,024 products,
where cuBLASLt's tiles ran at 560-600 TFLOP/s against the down product's 866 (the
2026-12-03 profile): flat.gemm_plan times it against cuBLAS at load, per product and
tiling, and keeps whichever is faster.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@dataclass(frozen=True)
class Tiles:
    """One tiling of `linear`: a `m` x `n` block of the output per step of a program, `k`
    wide slices of the operands, `stages` of them in flight; `subtile` stores the block in
    two halves (less shared memory for the epilogue, more for the stages); `specialize`
    gives the loads warps of their own (Hopper: no flattened loop then)."""

    m: int
    n: int
    k: int
    stages: int
    warps: int
    subtile: bool = False
    specialize: bool = False

    def __str__(self) -> str:
        extra = ("/sub" if self.subtile else "") + ("/ws" if self.specialize else "")
        return f"{self.m}x{self.n}x{self.k}/s{self.stages}/w{self.warps}{extra}"


# The tilings tried at load on a GPU: Hopper's FP16 shapes that fill its 227 KB of shared
# memory (a 128 x 256 block at 3-4 stages of 64-wide slices), and their 128 x 128 halves.
TILINGS = (
    Tiles(128, 256, 64, 3, 8),
    Tiles(128, 256, 64, 4, 8, subtile=True),
    Tiles(128, 128, 64, 4, 8),
    Tiles(128, 128, 64, 5, 4, subtile=True),
    Tiles(128, 256, 64, 3, 8, specialize=True),
)


@triton.jit
def _tile(tile, per_group, tiles_m, GROUP_M: tl.constexpr):
    """The output block of step `tile`: GROUP_M row blocks at a time walk the columns, so
    programs running side by side share their weights' slices in L2."""
    group = tile // per_group
    first = group * GROUP_M
    rows = tl.minimum(tiles_m - first, GROUP_M)
    return first + tile % rows, (tile % per_group) // rows


@triton.jit
def _finish(out_desc, acc, bias_ptr, row, col, N, WIDTH: tl.constexpr, GELU: tl.constexpr):
    cols = col + tl.arange(0, WIDTH)
    acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if GELU:  # tanh form: 0.5 x (1 + tanh(u)) = x sigmoid(2u)
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc * tl.sigmoid(2.0 * inner)
    out_desc.store([row, col], acc.to(out_desc.dtype))


@triton.jit(do_not_specialize=["M"])
def _linear(
    x_desc, w_desc, out_desc, bias_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, GELU: tl.constexpr, SUBTILE: tl.constexpr,
    PROGRAMS: tl.constexpr, SPECIALIZE: tl.constexpr,
):  # fmt: skip
    tiles_m, tiles_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    steps = tl.cdiv(K, BLOCK_K)
    done = tl.program_id(0) - PROGRAMS  # the epilogue's own count (a pipelining rule)
    for tile in tl.range(
        tl.program_id(0), tiles_m * tiles_n, PROGRAMS,
        flatten=not SPECIALIZE, warp_specialize=SPECIALIZE,
    ):  # fmt: skip
        pm, pn = _tile(tile, per_group, tiles_m, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(steps):
            x = x_desc.load([pm * BLOCK_M, step * BLOCK_K])
            w = w_desc.load([pn * BLOCK_N, step * BLOCK_K])
            acc = tl.dot(x, w.T, acc)
        done += PROGRAMS
        pm, pn = _tile(done, per_group, tiles_m, GROUP_M)
        row, col = pm * BLOCK_M, pn * BLOCK_N
        if SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            _finish(out_desc, left, bias_ptr, row, col, N, BLOCK_N // 2, GELU)
            _finish(out_desc, right, bias_ptr, row, col + BLOCK_N // 2, N, BLOCK_N // 2, GELU)
        else:
            _finish(out_desc, acc, bias_ptr, row, col, N, BLOCK_N, GELU)


@functools.cache
def _programs(device: torch.device) -> int:
    return int(torch.cuda.get_device_properties(device).multi_processor_count)


def tma_ready(t: torch.Tensor) -> bool:
    """Whether TMA can read or write `t` ([rows, width]): rows in one stride, elements
    contiguous, addresses and row strides on 16 bytes."""
    size = t.element_size()
    return (
        t.dim() == 2 and t.stride(1) == 1 and t.data_ptr() % 16 == 0
        and (t.stride(0) * size) % 16 == 0 and (t.shape[1] * size) % 16 == 0
    )  # fmt: skip


def linear(
    x: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor,
    tiles: Tiles,
    gelu: bool = False,
    out: torch.Tensor | None = None,
    programs: int | None = None,
) -> torch.Tensor:
    """`x @ weight.T + bias` ([rows, in] by [out, in]), with the tanh GELU when `gelu`,
    into `out` (rows of a larger tensor, say) or a new tensor; fp32 accumulators, the
    output in x's dtype. `programs`: how many run (the GPU's SMs unless given). Every
    operand must be `tma_ready`."""
    rows, width = x.shape
    n = weight.shape[0]
    if out is None:
        out = torch.empty((rows, n), dtype=x.dtype, device=x.device)
    for t in (x, weight, out):
        if not tma_ready(t):
            raise ValueError("linear's operands must be TMA-ready (see tma_ready)")
    programs = programs or _programs(x.device)
    x_desc = TensorDescriptor.from_tensor(x, [tiles.m, tiles.k])
    w_desc = TensorDescriptor.from_tensor(weight, [tiles.n, tiles.k])
    out_desc = TensorDescriptor.from_tensor(out, [tiles.m, tiles.n // (2 if tiles.subtile else 1)])
    steps = triton.cdiv(rows, tiles.m) * triton.cdiv(n, tiles.n)
    _linear[(min(programs, steps),)](
        x_desc, w_desc, out_desc, bias, rows, n, width,
        BLOCK_M=tiles.m, BLOCK_N=tiles.n, BLOCK_K=tiles.k, GROUP_M=8, GELU=gelu,
        SUBTILE=tiles.subtile, PROGRAMS=programs, SPECIALIZE=tiles.specialize,
        num_warps=tiles.warps, num_stages=tiles.stages,
    )  # fmt: skip
    return out
