"""OpenAI Triton kernels of the torch-gpu runtime's unpadded encoder (docq_flat.py).

Copied beside model.py as `docq_kernels.py`; imported only where CUDA and `triton` exist
(docq_flat.py falls back to PyTorch ops elsewhere, with the same maths). One program per
token row: a row of hidden states (1,024 wide for RoBERTa-large, 4,096 for its FFN) fits
in one block, so each kernel reads its inputs once and writes its outputs once:

- `add_layernorm`: LayerNorm(y + residual), the residual add and the norm in one pass
  (eager PyTorch reads and writes the row twice). With `out8` it also writes the row in
  FP8 e4m3 with its own scale (amax / 448), the input of the next FP8 matrix product.
- `gelu_quantize`: bias + exact (erf) GELU of the FFN's first product, written in FP8 with
  a per-row scale: the FFN's second product reads a quarter of the bytes.
- `quantize`: a row in FP8 with its scale (the attention output, before its projection).
- `varlen_attention`: attention over ragged windows (offsets `cu`) for the small batches'
  CUDA graphs, with query blocks of 64 rows: one 512-token window gives 8 x heads programs
  (128 for 16 heads, one wave of the H200's 132 SMs), where FA2's 128-row blocks give 64
  and leave half the GPU idle (18 us a layer at 1 x 512: 0.45 of the 1.5 ms a call).
- `linear`: `x @ W.T + b` (and the FFN's tanh GELU) as a persistent GEMM: one program per
  SM walks the output tiles, its operands brought in by TMA, so one tile's epilogue runs
  while the next tile's loads are in flight. For the large batches' K = 1,024 products,
  where cuBLASLt's tiles ran at 560-600 TFLOP/s against the down product's 866 (the
  2026-12-03 profile): docq_flat.plan_gemms times it against cuBLAS at load, per product
  and tiling, and keeps whichever is faster.

Per-row (per-token) scales follow each token's own range, so no calibration can go stale
and no token's outlier costs another token its precision; the weights carry per-channel
scales (docq_flat.Linear). `torch._scaled_mm` takes exactly these two scale vectors.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

FP8_MAX = 448.0  # largest finite float8_e4m3fn


def _block(width: int) -> tuple[int, int]:
    """The block covering one row, and the warps to run it with."""
    block = triton.next_power_of_2(width)
    return block, (4 if block <= 1024 else 8 if block <= 4096 else 16)


@triton.jit
def _add_layernorm(
    y_ptr, r_ptr, w_ptr, b_ptr, out_ptr, out8_ptr, scale_ptr,
    width, eps,
    HAS_RES: tl.constexpr, FP8: tl.constexpr, BLOCK: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    live = cols < width
    x = tl.load(y_ptr + row * width + cols, mask=live, other=0.0).to(tl.float32)
    if HAS_RES:
        x += tl.load(r_ptr + row * width + cols, mask=live, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / width
    centred = tl.where(live, x - mean, 0.0)
    var = tl.sum(centred * centred, axis=0) / width
    w = tl.load(w_ptr + cols, mask=live, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=live, other=0.0).to(tl.float32)
    # Rounded to the output type first: the FP8 copy quantizes what the FP16 path holds.
    out = (centred * tl.rsqrt(var + eps) * w + b).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + row * width + cols, out, mask=live)
    if FP8:
        value = out.to(tl.float32)
        scale = tl.maximum(tl.max(tl.abs(value), axis=0), 1e-12) / 448.0
        tl.store(out8_ptr + row * width + cols, (value / scale).to(tl.float8e4nv), mask=live)
        tl.store(scale_ptr + row, scale)


@triton.jit
def _gelu_quantize(
    h_ptr, b_ptr, out8_ptr, scale_ptr, width, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr
):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    live = cols < width
    x = tl.load(h_ptr + row * width + cols, mask=live, other=0.0).to(tl.float32)
    if HAS_BIAS:
        x += tl.load(b_ptr + cols, mask=live, other=0.0).to(tl.float32)
    g = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    g = tl.where(live, g, 0.0)
    scale = tl.maximum(tl.max(tl.abs(g), axis=0), 1e-12) / 448.0
    tl.store(out8_ptr + row * width + cols, (g / scale).to(tl.float8e4nv), mask=live)
    tl.store(scale_ptr + row, scale)


@triton.jit
def _quantize(x_ptr, out8_ptr, scale_ptr, width, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    live = cols < width
    x = tl.load(x_ptr + row * width + cols, mask=live, other=0.0).to(tl.float32)
    scale = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-12) / 448.0
    tl.store(out8_ptr + row * width + cols, (x / scale).to(tl.float8e4nv), mask=live)
    tl.store(scale_ptr + row, scale)


def _fp8_outputs(rows: int, width: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.empty((rows, width), dtype=torch.float8_e4m3fn, device=device),
        torch.empty((rows, 1), dtype=torch.float32, device=device),
    )


def add_layernorm(
    y: torch.Tensor,
    residual: torch.Tensor | None,
    weight: torch.Tensor,
    bias: torch.Tensor,
    eps: float,
    out_dtype: torch.dtype,
    fp8: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """LayerNorm(y + residual) in `out_dtype`; with `fp8` also its FP8 rows and row scales."""
    rows, width = y.shape
    out = torch.empty((rows, width), dtype=out_dtype, device=y.device)
    out8, scale = _fp8_outputs(rows, width, y.device) if fp8 else (out, out)
    block, warps = _block(width)
    _add_layernorm[(rows,)](
        y, residual if residual is not None else y, weight, bias, out, out8, scale,
        width, eps, HAS_RES=residual is not None, FP8=fp8, BLOCK=block, num_warps=warps,
    )  # fmt: skip
    return (out, out8, scale) if fp8 else (out, None, None)


def gelu_quantize(h: torch.Tensor, bias: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """GELU(h + bias) (exact erf form) as FP8 rows and their scales."""
    rows, width = h.shape
    out8, scale = _fp8_outputs(rows, width, h.device)
    block, warps = _block(width)
    _gelu_quantize[(rows,)](
        h, bias if bias is not None else h, out8, scale, width,
        HAS_BIAS=bias is not None, BLOCK=block, num_warps=warps,
    )  # fmt: skip
    return out8, scale


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`x`'s rows as FP8 and their scales."""
    rows, width = x.shape
    out8, scale = _fp8_outputs(rows, width, x.device)
    block, warps = _block(width)
    _quantize[(rows,)](x, out8, scale, width, BLOCK=block, num_warps=warps)
    return out8, scale


@triton.jit
def _varlen_attention(
    q_ptr, k_ptr, v_ptr, out_ptr, cu_ptr,
    token_stride, out_stride, scale,
    DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    block, window, head = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    start = tl.load(cu_ptr + window).to(tl.int64)
    length = (tl.load(cu_ptr + window + 1) - start).to(tl.int32)
    if block * BLOCK_M >= length:  # past this window's tokens (a graph holds spare windows)
        return
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, DIM)
    head_at = head * DIM
    q = tl.load(
        q_ptr + (start + rows)[:, None] * token_stride + head_at + dims[None, :],
        mask=(rows < length)[:, None], other=0.0,
    )  # fmt: skip
    # Online softmax in base 2 (exp2 is the hardware's): scores scaled by log2(e) once.
    q = (q * (scale * 1.4426950408889634)).to(q_ptr.dtype.element_ty)
    top = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    total = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, DIM), dtype=tl.float32)
    for first in range(0, length, BLOCK_N):
        cols = first + tl.arange(0, BLOCK_N)
        live = cols < length
        at = (start + cols)[:, None] * token_stride + head_at + dims[None, :]
        k = tl.load(k_ptr + at, mask=live[:, None], other=0.0)
        v = tl.load(v_ptr + at, mask=live[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k))
        scores = tl.where(live[None, :], scores, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, axis=1))
        p = tl.math.exp2(scores - new_top[:, None])
        shrink = tl.math.exp2(top - new_top)
        total = total * shrink + tl.sum(p, axis=1)
        acc = acc * shrink[:, None] + tl.dot(p.to(v.dtype), v)
        top = new_top
    out = acc / total[:, None]
    tl.store(
        out_ptr + (start + rows)[:, None] * out_stride + head_at + dims[None, :],
        out.to(out_ptr.dtype.element_ty), mask=(rows < length)[:, None],
    )  # fmt: skip


def varlen_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, longest: int
) -> torch.Tensor:
    """softmax(q k^T / sqrt(dim)) v within each window `cu` cuts the tokens into.

    q, k, v: `[tokens, heads, dim]` views of one fused qkv product (the same token stride,
    the heads side by side, dim contiguous); cu: int32 `[windows + 1]`; longest: an upper
    bound of the window lengths (the grid, as varlen_attn's max_q). The output is
    `[tokens, heads, dim]`, contiguous; rows of tokens past cu[-1] are left unwritten."""
    tokens, heads, dim = q.shape
    if dim < 16 or dim & (dim - 1):
        raise ValueError(f"the head width must be a power of two >= 16, not {dim}")
    if not (q.stride() == k.stride() == v.stride() and q.stride(2) == 1 and q.stride(1) == dim):
        raise ValueError("q, k and v must be [tokens, heads, dim] views with one layout")
    out = torch.empty((tokens, heads, dim), dtype=q.dtype, device=q.device)
    block_m = 64
    grid = (triton.cdiv(longest, block_m), cu.shape[0] - 1, heads)
    _varlen_attention[grid](
        q, k, v, out, cu, q.stride(0), heads * dim, dim**-0.5,
        DIM=dim, BLOCK_M=block_m, BLOCK_N=64, num_warps=4, num_stages=2,
    )  # fmt: skip
    return out


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
