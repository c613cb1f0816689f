"""The flat engine's four matrix products alone on one GPU, in each way PyTorch can run them:
which algorithm choice could close the gap between the K=1,024 products (562-601 TFLOP/s in
the 2026-12-03 profile) and the down product (866), NOTES.md.

RoBERTa-large's products at 63 x 512 tokens (the saturated batch) and 512 (one window),
FP16, each timed by CUDA events (median of --repeat), with the kernel it ran, as:

- `linear`: F.linear, the engine's call (cuBLASLt with the bias in its epilogue);
- `linear-cublaslt` (or `-cublas`): the same with the other preferred_blas_library;
- `nn`: the weight stored transposed ([in, out], contiguous), addmm(b, x, Wt);
- `mm+bias`: the product without bias, then the bias added (no epilogue);
- `gelu`: the up product's tanh GELU in the epilogue (_addmm_activation), as the engine runs
  it; `gelu-nn` the same on the transposed weight;
- `compiled` (with --compile): torch.compile max-autotune-no-cudagraphs, Triton's GEMM
  templates against cuBLAS, autotuned per shape;
- `docq-<tiles>`: docq's persistent TMA GEMM (serving/runtimes/kernels.py `linear`) in each
  tiling the runtime tries at load (`gemm=triton`), with the tanh GELU for the up product as
  the engine runs it (`docq-gelu-<tiles>`).

    python3 -m bench.gpu.gemm --out $OUT/gemm.json [--compile]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from bench.gpu.profile import cuda_ms, kernel_profile
from serving.runtimes import kernels

HIDDEN = 1024
PRODUCTS = {"qkv": (HIDDEN, 3 * HIDDEN), "out": (HIDDEN, HIDDEN),
            "up": (HIDDEN, 4 * HIDDEN), "down": (4 * HIDDEN, HIDDEN)}  # fmt: skip
TOKENS = (63 * 512, 512)


def ways(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, product: str, compiled: bool
         ) -> dict[str, Callable[[], Any]]:  # fmt: skip
    wt = w.t().contiguous()
    out: dict[str, Callable[[], Any]] = {
        "linear": lambda: F.linear(x, w, b),
        "nn": lambda: torch.addmm(b, x, wt),
        "mm+bias": lambda: torch.mm(x, w.t()).add_(b),
    }
    if product == "up":
        out["gelu"] = lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True)
        out["gelu-nn"] = lambda: torch._addmm_activation(b, x, wt, use_gelu=True)
    for tiles in kernels.TILINGS:  # bound now: the lambdas run after the loop
        out[f"docq-{tiles}"] = lambda t=tiles: kernels.linear(x, w, b, t)
        if product == "up":
            out[f"docq-gelu-{tiles}"] = lambda t=tiles: kernels.linear(x, w, b, t, gelu=True)
    if compiled:
        fn = torch.compile(lambda a: F.linear(a, w, b), mode="max-autotune-no-cudagraphs")
        out["compiled"] = lambda: fn(x)
    return out


def measure(repeat: int, compiled: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for tokens in TOKENS:
        for product, (k, n) in PRODUCTS.items():
            x = torch.randn((tokens, k), device="cuda", dtype=torch.float16)
            w = torch.randn((n, k), device="cuda", dtype=torch.float16) / k**0.5
            b = torch.randn(n, device="cuda", dtype=torch.float16)
            flop = 2 * tokens * k * n
            entry: dict[str, Any] = {"m": tokens, "k": k, "n": n}
            for name, fn in ways(x, w, b, product, compiled).items():
                try:
                    ms = cuda_ms(fn, repeat)
                except Exception as exc:  # a way this torch cannot run is a result
                    entry[name] = {"error": str(exc).splitlines()[0][:200]}
                    continue
                top = kernel_profile(fn, calls=2).get("top_kernels") or [{}]
                entry[name] = {"ms": ms, "tflop_s": round(flop / ms / 1e9, 1),
                               "kernel": top[0].get("name")}  # fmt: skip
            default = torch.backends.cuda.preferred_blas_library()
            other = "cublas" if default == torch._C._BlasBackend.Cublaslt else "cublaslt"
            torch.backends.cuda.preferred_blas_library(other)
            try:
                ms = cuda_ms(lambda: F.linear(x, w, b), repeat)  # noqa: B023 - called here
                entry[f"linear-{other}"] = {"ms": ms, "tflop_s": round(flop / ms / 1e9, 1)}
            finally:
                torch.backends.cuda.preferred_blas_library(default)
            result[f"{product}@{tokens}"] = entry
            print(product, tokens, entry, flush=True)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--compile", action="store_true", help="also torch.compile max-autotune")
    args = ap.parse_args()
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "blas_default": str(torch.backends.cuda.preferred_blas_library()),
              "products": measure(args.repeat, args.compile)}  # fmt: skip
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
