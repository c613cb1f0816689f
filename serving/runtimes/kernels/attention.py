"""`varlen_attention`: attention over ragged windows (offsets `cu`) for the small batches'
CUDA graphs, with query blocks of 64 rows: one 512-token window gives 8 x heads programs
(128 for 16 heads, one wave of the H200's 132 SMs), where FA2's 128-row blocks give 64 and
leave half the GPU idle (18 us a layer at 1 x 512: 0.45 of the 1.5 ms a call).
flat.attention.triton_refused checks it against flash at load.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


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
