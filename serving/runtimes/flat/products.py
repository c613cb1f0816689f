"""A layer's matrix products: `x @ W.T + b` in the encoder's dtype (cuBLAS, or docq's GEMM
where flat.gemm_plan chose it), or in FP8.

Precisions: float16 / bfloat16 / float32 as loaded, or `fp8`: the four matrix products of
each layer in FP8 e4m3 (`torch._scaled_mm`), weights with per-output-channel scales,
activations with per-token scales written by the kernels that produce them (LayerNorm,
GELU: kernels/rowwise.py); the residual stream stays FP16, attention BF16, the head FP16.
`fp8_products` names which of the four (`qkv`, `out`, `up`, `down`) run in FP8; the others
stay FP16, for a model whose activations one FP8 scale per token cannot hold (the gate
says which).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

try:  # docq's GEMM: CUDA hosts with OpenAI Triton
    from ..kernels import gemm
except ImportError:  # pragma: no cover - depends on the host
    gemm = None  # type: ignore[assignment]

FP8 = "fp8"
PRODUCTS = ("qkv", "out", "up", "down")  # a layer's four matrix products, in order
FP8_MAX = 448.0
TOKEN_ALIGN = 16  # FP8 products need every dimension a multiple of 16: tokens are padded to it


def fp8_products(spec: str) -> frozenset[str]:
    """The products a runtime parameter names (`all`, or PRODUCTS joined by "+" or ",")."""
    parts = spec.replace("+", ",").split(",")
    names = PRODUCTS if spec.strip() in ("", "all") else [p.strip() for p in parts]
    unknown = sorted(set(names) - set(PRODUCTS))
    if unknown or not names:
        raise ValueError(f"fp8_products must be 'all' or a comma list of {PRODUCTS}, not {spec!r}")
    return frozenset(names)


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`x` ([rows, width]) as float8 e4m3 with one float32 scale per row (amax / 448)."""
    scale = x.float().abs().amax(dim=-1, keepdim=True).clamp(min=1e-12) / FP8_MAX
    return (x.float() / scale).to(torch.float8_e4m3fn), scale


class Linear:
    """One dense layer: `x @ W.T + b` in the encoder's dtype, or in FP8."""

    def __init__(
        self, weight: torch.Tensor, bias: torch.Tensor, dtype: torch.dtype, fp8: bool
    ) -> None:
        weight, bias = weight.detach(), bias.detach()
        self.fp8 = fp8
        if fp8:
            # Per output channel: row j of W is scaled by its own amax.
            w8, scale = quantize_rows(weight.float())
            self.w8, self.w_scale = w8, scale.t().contiguous()  # [1, out]
            self.bias = bias.to(torch.bfloat16)
        else:
            self.weight, self.bias = weight.to(dtype), bias.to(dtype)
        # docq's GEMM (kernels/gemm.py's linear) with these tiles, for calls of at least
        # `min_tokens` rows, where plan_gemms found it faster than cuBLAS; else None.
        self.tiles: Any = None
        self.min_tokens = 0

    def _own(self, x: torch.Tensor) -> bool:
        """Whether docq's GEMM runs this call."""
        return self.tiles is not None and x.shape[0] >= self.min_tokens and gemm.tma_ready(x)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._own(x):
            return gemm.linear(x, self.weight, self.bias, self.tiles)  # type: ignore[no-any-return]
        return F.linear(x, self.weight, self.bias)

    def into(self, x: torch.Tensor, out: torch.Tensor) -> None:
        """`self(x)` written into `out` (rows of a larger output: no copy to join them)."""
        if self._own(x) and gemm.tma_ready(out):
            gemm.linear(x, self.weight, self.bias, self.tiles, out=out)
        else:
            torch.addmm(self.bias, x, self.weight.t(), out=out)

    def gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
        """GELU (tanh form) of the product, inside the GEMM's epilogue on CUDA."""
        if self._own(x):
            return gemm.linear(x, self.weight, self.bias, self.tiles, gelu=True)  # type: ignore[no-any-return]
        if x.is_cuda:
            return torch._addmm_activation(self.bias, x, self.weight.t(), use_gelu=True)
        return F.gelu(self(x), approximate="tanh")

    def scaled(self, x8: torch.Tensor, x_scale: torch.Tensor, bias: bool = True) -> torch.Tensor:
        """The product of FP8 rows `x8` (row scales `x_scale`, [rows, 1]), in bfloat16."""
        b = self.bias if bias else None
        if x8.is_cuda:
            return torch._scaled_mm(
                x8, self.w8.t(), scale_a=x_scale, scale_b=self.w_scale, bias=b,
                out_dtype=torch.bfloat16,
            )  # fmt: skip
        out = (x8.float() * x_scale) @ (self.w8.float() * self.w_scale.t()).t()
        return (out + b.float() if b is not None else out).to(torch.bfloat16)
