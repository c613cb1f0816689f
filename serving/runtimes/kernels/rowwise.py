"""The kernels that compute one token row at a time: one program per row. A row of hidden
states (1,024 wide for RoBERTa-large, 4,096 for its FFN) fits in one block, so each kernel
reads its inputs once and writes its outputs once:

- `add_layernorm`: LayerNorm(y + residual), the residual add and the norm in one pass
  (eager PyTorch reads and writes the row twice). With `out8` it also writes the row in
  FP8 e4m3 with its own scale (amax / 448), the input of the next FP8 matrix product.
- `gelu_quantize`: bias + exact (erf) GELU of the FFN's first product, written in FP8 with
  a per-row scale: the FFN's second product reads a quarter of the bytes.
- `quantize`: a row in FP8 with its scale (the attention output, before its projection).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

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
