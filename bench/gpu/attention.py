"""The flat engine's attention kernels side by side on one GPU: flash (FA2, `varlen_attn`)
against cuDNN's fused attention over the same ragged offsets, and, where every sequence is
as long, cuDNN over one `[sequences, length]` block (`cudnn-dense`, what the runtime's
`attention=cudnn` runs), RoBERTa-large's 16 heads of 64, FP16.

q, k and v are laid out as the encoder hands them over (strided views of one fused
[tokens, 3 x 1,024] product) and, for cuDNN, also as contiguous copies; each case's
largest difference from flash and its median time by CUDA events, eager (the runtime's
large batches), and flash also replayed in a CUDA graph (its small batches). cuDNN's
capture is tried once, last (`cudnn_in_graph`): on the H200 it failed (2026-12-03) and a
failed capture leaves the CUDA RNG unusable for what follows. Batches: 64 x 512 full, 64
ragged at 75% real tokens, 8 x 512 and 1 x 512.

    python3 -m bench.gpu.attention --out $OUT/attention.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.attention.varlen import varlen_attn

from bench.gpu.profile import cuda_ms
from serving.runtimes.flat import blocks, cudnn_dense

HEADS, DIM = 16, 64


def cudnn_varlen(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor, cu_k: torch.Tensor,
    max_q: int, max_k: int,
) -> torch.Tensor:  # fmt: skip
    """Attention of ragged `[tokens, heads, dim]` q, k, v over the offsets, through cuDNN
    (torch 2.11 builds its plan anew every call: 50-70 ms on the H200, 2026-12-03)."""
    out = torch.ops.aten._cudnn_attention_forward(
        q, k, v, None, cu_q, cu_k, max_q, max_k, False, 0.0, False, False
    )
    return out[0]  # type: ignore[no-any-return]


def lengths(name: str) -> list[int]:
    if name == "64x512-ragged":  # 75% real tokens, lengths drawn as a document's windows end
        rng = np.random.default_rng(0)
        return [512 if rng.random() < 0.6 else int(rng.integers(16, 512)) for _ in range(64)]
    rows, length = (int(x) for x in name.split("x"))
    return [length] * rows


def graphed(fn: Callable[[], torch.Tensor]) -> Callable[[], Any]:
    """`fn` captured once as a CUDA graph; the returned callable replays it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def case(name: str, repeat: int) -> dict[str, Any]:
    lens = lengths(name)
    tokens, longest = sum(lens), max(lens)
    cu = torch.tensor(np.cumsum([0, *lens]), dtype=torch.int32, device="cuda")
    fused = torch.randn((tokens, 3 * HEADS * DIM), device="cuda", dtype=torch.float16)
    qkv = fused.view(tokens, 3, HEADS, DIM)
    q, k, v = qkv.unbind(1)
    qc, kc, vc = (t.contiguous() for t in (q, k, v))
    want = varlen_attn(q, k, v, cu, cu, longest, longest)
    kernels: dict[str, Callable[[], torch.Tensor]] = {
        "flash": lambda: varlen_attn(q, k, v, cu, cu, longest, longest),
        "cudnn": lambda: cudnn_varlen(q, k, v, cu, cu, longest, longest),
        "cudnn-contiguous": lambda: cudnn_varlen(qc, kc, vc, cu, cu, longest, longest),
        "cudnn-copying": lambda: cudnn_varlen(
            q.contiguous(), k.contiguous(), v.contiguous(), cu, cu, longest, longest
        ),
    }
    if len(set(lens)) == 1:  # one block of equal sequences, laid out as the runtime has it
        n = len(lens)
        kernels["cudnn-dense"] = lambda: (
            cudnn_dense(*blocks(fused, HEADS, n, longest)).transpose(1, 2).reshape(q.shape)
        )
    out: dict[str, Any] = {"tokens": tokens, "sequences": len(lens), "longest": longest}
    for kname, fn in kernels.items():
        try:
            diff = float((fn().float() - want.float()).abs().max())
            entry = {"max_abs_diff_vs_flash": round(diff, 5), "eager_ms": cuda_ms(fn, repeat)}
            if kname == "flash":
                entry["graph_ms"] = cuda_ms(graphed(fn), repeat)
        except RuntimeError as exc:
            entry = {"error": str(exc).splitlines()[0][:300]}
        out[kname] = entry
        print(name, kname, entry, flush=True)
    return out


def cudnn_graph(repeat: int) -> dict[str, Any]:
    """cuDNN's varlen call captured in a CUDA graph at 1 x 512: its replay time, or why not."""
    cu = torch.tensor([0, 512], dtype=torch.int32, device="cuda")
    q, k, v = torch.randn((512, 3, HEADS, DIM), device="cuda", dtype=torch.float16).unbind(1)
    try:
        return {
            "graph_ms": cuda_ms(graphed(lambda: cudnn_varlen(q, k, v, cu, cu, 512, 512)), repeat)
        }
    except RuntimeError as exc:
        return {"error": str(exc).splitlines()[0][:300]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()
    try:  # torch checks the cuDNN it loads against the one it was built with
        cudnn: int | str | None = torch.backends.cudnn.version()
    except RuntimeError as exc:
        cudnn = str(exc).splitlines()[0][:300]
    result = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cudnn": cudnn,
        "cases": {n: case(n, args.repeat) for n in ("64x512", "64x512-ragged", "8x512", "1x512")},
    }
    result["cudnn_in_graph"] = cudnn_graph(args.repeat)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
