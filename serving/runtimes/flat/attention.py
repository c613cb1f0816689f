"""The flat encoder's attention kernels, and the checks that choose among them at load.

`small_attention` picks the kernel of the small batches' CUDA graphs: `flash` (FA2's
varlen) or `triton` (kernels/attention.py's varlen_attention: query blocks of 64 rows,
twice FA2's programs for a window, for batches of a few windows that leave FA2's grid half
the GPU); checked against flash at load, flash where it differs or cannot run.

`attention` picks the attention kernel: `flash` (FA2, `varlen_attn`, over the ragged
offsets) or `cudnn`: cuDNN's fused attention (its Hopper kernel, 5.1 ms against FA2's 7.5
for the 24 layers of 63 x 512 on the H200, 2026-12-03) for the windows of a whole window's
length (`dense_len`, the model's max_seq_len), which the runtime lays out first, as one
`[windows, length]` block: a shape whose cuDNN plan torch caches (one per window count,
built at load by `warm_dense`), where cuDNN's ragged call builds its plan anew every call
(torch 2.11: 50-70 ms a call). Shorter windows run flash, and so do the small batches'
CUDA graphs. A `cudnn` engine checks cuDNN against flash at load on a block laid out as the
encoder lays it (q, k, v strided views of the fused product) and falls back to flash,
saying why, where they differ, cuDNN refuses, or it is slower call for call.

Without CUDA, `sdpa_per_window` runs the same maths through PyTorch's SDPA.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch
import torch.nn.functional as F

from . import timing

try:  # docq's varlen attention kernel: CUDA hosts with OpenAI Triton
    from ..kernels import attention as triton_kernel
except ImportError:  # pragma: no cover - depends on the host
    triton_kernel = None  # type: ignore[assignment]

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # pragma: no cover - torch before 2.10
    varlen_attn = None  # type: ignore[assignment]

ATTENTION = ("flash", "cudnn")
SMALL_ATTENTION = ("flash", "triton")


def cudnn_dense(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention of equal-length sequences (`[windows, heads, length, dim]` views) through
    cuDNN; the output is laid out as q is (windows, length, heads, dim in memory)."""
    out = torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, False)
    return out[0]  # type: ignore[no-any-return]


def blocks(qkv: torch.Tensor, heads: int, windows: int, length: int) -> tuple[torch.Tensor, ...]:
    """q, k, v of the first `windows` x `length` tokens of a fused `[tokens, 3 x hidden]`
    product, as `[windows, heads, length, dim]` views (no copy)."""
    split = windows * length
    parts = qkv[:split].view(windows, length, 3, heads, -1).unbind(2)
    return tuple(t.transpose(1, 2) for t in parts)


def cudnn_refused(device: str, heads: int, hidden: int, length: int) -> str:
    """Why cuDNN's attention cannot stand in for flash on blocks of `length`-token windows
    here ("" when it can): it raises, differs from flash on 3 windows, or is slower than
    flash call for call, host time included (its ragged call was, 50-70 ms against 0.07 on
    the H200 with torch 2.11, since it builds its plan every call)."""
    windows, dim = 3, hidden // heads
    cu = torch.arange(0, windows * length + 1, length, dtype=torch.int32, device=device)
    gen = torch.Generator(device=device).manual_seed(0)
    qkv = torch.randn((windows * length, 3 * hidden), generator=gen, device=device).half()
    q, k, v = qkv.view(-1, 3, heads, dim).unbind(1)  # strided, as FlatEncoder lays them out

    def dense() -> torch.Tensor:
        return cudnn_dense(*blocks(qkv, heads, windows, length)).transpose(1, 2)

    def flash() -> torch.Tensor:
        out = varlen_attn(q, k, v, cu, cu, length, length)
        assert isinstance(out, torch.Tensor)  # no auxiliary outputs were asked for
        return out.view(windows, length, heads, dim)

    try:
        got, want = dense(), flash()
    except RuntimeError as exc:  # a CPU, or a cuDNN without the kernel
        return f"cuDNN refused the call: {str(exc).splitlines()[0][:200]}"
    diff = float((got.float() - want.float()).abs().max())
    if not diff < 1e-2:
        return f"cuDNN differs from flash by {diff:.3g}"
    cudnn_s, flash_s = (timing.seconds_per_call(fn, device) for fn in (dense, flash))
    if cudnn_s > 1.25 * flash_s + 2e-4:  # clearly slower: a quarter and 0.2 ms of slack
        return (
            f"cuDNN is slower than flash: {cudnn_s * 1e3:.2f} ms a call against {flash_s * 1e3:.2f}"
        )
    return ""


def triton_refused(device: str, heads: int, hidden: int, length: int) -> str:
    """Why docq's Triton varlen attention cannot stand in for flash in the small batches'
    graphs here ("" when it can): it raises (a compiler or launch failure), or it differs
    from flash on windows of `length`, a middling and one token, laid out as FlatEncoder
    lays them. FlatEncoder asks only where CUDA and the kernels are."""
    sizes = [length, length // 2 + 3, 1]
    cu = torch.tensor([0, *itertools.accumulate(sizes)], dtype=torch.int32, device=device)
    gen = torch.Generator(device=device).manual_seed(0)
    qkv = torch.randn((int(sum(sizes)), 3 * hidden), generator=gen, device=device).half()
    q, k, v = qkv.view(-1, 3, heads, hidden // heads).unbind(1)
    try:
        got = triton_kernel.varlen_attention(q, k, v, cu, length)
    except Exception as exc:  # a compiler or launch failure: the kernel cannot serve here
        return f"the Triton kernel failed: {str(exc).splitlines()[0][:200]}"
    want = varlen_attn(q, k, v, cu, cu, length, length)
    assert isinstance(want, torch.Tensor)
    diff = float((got.float() - want.float()).abs().max())
    return "" if diff < 1e-2 else f"the Triton kernel differs from flash by {diff:.3g}"


def full_first(
    ids: np.ndarray, cu: np.ndarray, length: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The windows laid out with those of `length` tokens first, for one cuDNN block.

    Returns ids and offsets in that order, each window's index in it (`order`: the logits
    come back in the request's order) and how many windows lead; a batch already in that
    order is returned as it is."""
    sizes = np.diff(cu)
    full = sizes == length
    dense = int(full.sum())
    if full[:dense].all():  # none, all, or already first
        return ids, cu, np.arange(sizes.size), dense
    order = np.concatenate([np.flatnonzero(full), np.flatnonzero(~full)])
    new_cu = np.zeros_like(cu)
    np.cumsum(sizes[order], out=new_cu[1:])
    bounds = cu.tolist()  # whole windows copied as slices: fewer passes than a token gather
    laid = np.concatenate([ids[bounds[i] : bounds[i + 1]] for i in order.tolist()])
    where = np.empty_like(order)
    where[order] = np.arange(order.size)
    return laid, new_cu, where, dense


def sdpa_per_window(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: list[int], cu_k: list[int]
) -> torch.Tensor:
    """varlen attention's maths through PyTorch's SDPA, one window at a time (a CPU, or
    float32 on a GPU): window i's queries q[cu_q[i]:cu_q[i + 1]] against its keys and values
    k, v[cu_k[i]:cu_k[i + 1]], `[tokens, heads, dim]` in and out (rows of no window: 0)."""
    out = torch.zeros_like(q)
    for (a, b), (c, d) in zip(
        itertools.pairwise(cu_q), itertools.pairwise(cu_k), strict=True
    ):  # fmt: skip
        if d > c:
            sq, sk, sv = (t.transpose(0, 1).unsqueeze(0) for t in (q[a:b], k[c:d], v[c:d]))
            out[a:b] = F.scaled_dot_product_attention(sq, sk, sv)[0].transpose(0, 1)
    return out
