"""The torch-gpu runtime's unpadded encoder: BERT-family sequence classifiers run on one flat
tensor of real tokens.

Copied beside model.py as `docq_flat.py`. Every execute() hands it the batch's windows as
one `[tokens]` array with sequence offsets (`cu`, `[n + 1]`, int32), never a padded
`[rows, longest]` block: the matrix products, norms and activations run on real tokens
only, attention runs per sequence through `torch.nn.attention.varlen.varlen_attn` (flash
attention over the offsets), and the classifier reads each sequence's first token. A
batch whose last windows are short costs what its tokens cost, where the padded runtime
paid for its longest row in every row and fell back from flash to the masked kernel.

Weights come from the Hugging Face checkpoint (BERT, RoBERTa and XLM-RoBERTa layouts: post-
LayerNorm encoder, absolute positions, GELU, a two-layer tanh head on the first token).
Precisions: float16 / bfloat16 / float32 as loaded, or `fp8`: the four matrix products of
each layer in FP8 e4m3 (`torch._scaled_mm`), weights with per-output-channel scales,
activations with per-token scales written by the kernels that produce them (LayerNorm,
GELU: docq_kernels.py); the residual stream stays FP16, attention BF16, the head FP16.
`fp8_products` names which of the four (`qkv`, `out`, `up`, `down`) run in FP8; the others
stay FP16, for a model whose activations one FP8 scale per token cannot hold (the gate
says which).

`attention` picks the varlen kernel: `flash` (FA2, `varlen_attn`) or `cudnn` (cuDNN's fused
attention over the same ragged offsets, `aten._cudnn_attention_forward`; a 2026-12-01 run
had it 3-5% ahead of FA2 on the padded engine, NOTES.md). A `cudnn` engine checks it against flash
at load on a ragged batch laid out as the encoder lays it (q, k, v strided views of the
fused product) and falls back to flash, saying why, where they differ, cuDNN refuses, or it
is slower call for call (torch 2.11 on the H200: 37-52 ms a call against flash's 0.07).
cuDNN runs the eager (large) batches only: its call cannot be captured in a CUDA graph on
the H200 (torch 2.11, cuDNN 9.19, 2026-12-03), so the small batches' graphs run flash.

`gelu` picks the FFN's activation: `erf` (the checkpoint's exact GELU) or `tanh` (the
tanh approximation inside the cuBLASLt epilogue of the first FFN product, one pass fewer
over a [tokens, 4 x hidden] tensor); the parity gate decides whether tanh may serve.

Where CUDA or OpenAI Triton is missing the same maths runs in PyTorch ops (attention as
SDPA per sequence, FP8 emulated by rounding to float8 and computing in float32), so the
offsets, the weight layout and the quantization are tested on a CPU.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

try:  # the fused kernels: CUDA hosts with OpenAI Triton (docq_kernels.py beside this file)
    import docq_kernels as kernels
except ImportError:  # pragma: no cover - depends on the host
    kernels = None

try:
    from torch.nn.attention.varlen import varlen_attn
except ImportError:  # pragma: no cover - torch before 2.10
    varlen_attn = None  # type: ignore[assignment]

ARCHITECTURES = ("bert", "roberta", "xlm-roberta")
FP8 = "fp8"
PRODUCTS = ("qkv", "out", "up", "down")  # a layer's four matrix products, in order
ATTENTION = ("flash", "cudnn")
FP8_MAX = 448.0
TOKEN_ALIGN = 16  # FP8 products need every dimension a multiple of 16: tokens are padded to it


def unsupported(config: Any) -> str | None:
    """Why the checkpoint's `config` cannot run flat (None: it can)."""
    if config.model_type not in ARCHITECTURES:
        return f"model_type {config.model_type!r} is not one of {ARCHITECTURES}"
    if getattr(config, "position_embedding_type", "absolute") != "absolute":
        return "only absolute position embeddings run flat"
    if config.hidden_act != "gelu" or getattr(config, "is_decoder", False):
        return "only encoders with GELU run flat"
    return None


def positions(config: Any, ids: np.ndarray, cu: np.ndarray) -> np.ndarray:
    """Each token's position id, as the checkpoint's model numbers them in a padded row.

    BERT counts from 0 in each sequence; RoBERTa counts non-padding tokens from
    pad_token_id + 1 and gives padding ids pad_token_id (transformers'
    create_position_ids_from_input_ids)."""
    starts = np.repeat(cu[:-1], np.diff(cu)).astype(np.int64)
    if config.model_type == "bert":
        return np.arange(ids.size, dtype=np.int64) - starts
    pad = int(config.pad_token_id)
    real = (ids != pad).astype(np.int64)
    counted = np.cumsum(real)
    before = np.concatenate([[0], counted])[starts]  # real tokens before the sequence
    return np.where(real == 1, counted - before + pad, pad)


def fp8_products(spec: str) -> frozenset[str]:
    """The products a runtime parameter names (`all`, or PRODUCTS joined by "+" or ",")."""
    parts = spec.replace("+", ",").split(",")
    names = PRODUCTS if spec.strip() in ("", "all") else [p.strip() for p in parts]
    unknown = sorted(set(names) - set(PRODUCTS))
    if unknown or not names:
        raise ValueError(f"fp8_products must be 'all' or a comma list of {PRODUCTS}, not {spec!r}")
    return frozenset(names)


def cudnn_varlen(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_q: torch.Tensor, cu_k: torch.Tensor,
    max_q: int, max_k: int,
) -> torch.Tensor:  # fmt: skip
    """Attention of ragged `[tokens, heads, dim]` q, k, v over the offsets, through cuDNN."""
    out = torch.ops.aten._cudnn_attention_forward(
        q, k, v, None, cu_q, cu_k, max_q, max_k, False, 0.0, False, False
    )
    return out[0]  # type: ignore[no-any-return]


def cudnn_refused(device: str, heads: int, hidden: int) -> str:
    """Why cuDNN's varlen attention cannot stand in for flash here ("" when it can): it
    raises, differs from flash on sequences of 1, 7, 64, 300 and 512 tokens, or is slower
    than flash call for call, host time included (torch 2.11 builds its cuDNN graph anew for
    each ragged call: 50-70 ms against flash's 0.3, on the H200, 2026-12-03). Eager calls
    only: on the H200 (cuDNN 9.19) the call cannot be captured in a CUDA graph either, so
    the graphs of small batches always run flash (FlatEncoder.forward)."""
    lengths = [1, 7, 64, 300, 512]
    cu = torch.tensor(np.cumsum([0, *lengths]), dtype=torch.int32, device=device)
    gen = torch.Generator(device=device).manual_seed(0)
    qkv = torch.randn((sum(lengths), 3, heads, hidden // heads), generator=gen, device=device)
    q, k, v = qkv.half().unbind(1)  # strided, as FlatEncoder._attention hands them over
    args = (q, k, v, cu, cu, max(lengths), max(lengths))
    try:
        got = cudnn_varlen(*args)
        want = varlen_attn(*args)
        assert isinstance(want, torch.Tensor)  # no auxiliary outputs were asked for
    except RuntimeError as exc:
        return f"cuDNN refused the varlen call: {str(exc).splitlines()[0][:200]}"
    diff = float((got.float() - want.float()).abs().max())
    if not diff < 1e-2:
        return f"cuDNN differs from flash by {diff:.3g}"
    cudnn_s, flash_s = (_seconds_per_call(fn, args, device) for fn in (cudnn_varlen, varlen_attn))
    if cudnn_s > 1.25 * flash_s + 2e-4:  # clearly slower: a quarter and 0.2 ms of slack
        return (
            f"cuDNN is slower than flash: {cudnn_s * 1e3:.2f} ms a call against {flash_s * 1e3:.2f}"
        )
    return ""


def _seconds_per_call(fn: Any, args: tuple[Any, ...], device: str, calls: int = 5) -> float:
    """Wall seconds per call of `fn(*args)` after one warm-up, host work included."""
    fn(*args)
    sync = torch.cuda.synchronize if device != "cpu" else (lambda *_: None)
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    sync(device)
    return (time.perf_counter() - start) / calls


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

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)

    def gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
        """GELU (tanh form) of the product, inside the GEMM's epilogue on CUDA."""
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


@dataclass
class Norm:
    weight: torch.Tensor
    bias: torch.Tensor
    eps: float


@dataclass
class Layer:
    qkv: Linear
    out: Linear
    norm1: Norm
    up: Linear
    down: Linear
    norm2: Norm


def _fused_qkv(attention: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """Query, key and value projections as one [3 x hidden, hidden] weight and its bias."""
    parts = (attention.query, attention.key, attention.value)
    return torch.cat([p.weight for p in parts]), torch.cat([p.bias for p in parts])


class FlatEncoder:
    """A sequence classifier's forward pass over `[tokens]` with sequence offsets."""

    def __init__(
        self,
        model: Any,
        device: str,
        dtype: torch.dtype | str,
        gelu: str = "erf",
        products: frozenset[str] = frozenset(PRODUCTS),
        attention: str = "flash",
    ) -> None:
        reason = unsupported(model.config)
        if reason:
            raise ValueError(reason)
        if gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be 'erf' or 'tanh', not {gelu!r}")
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, not {attention!r}")
        self.config, self.device, self.gelu = model.config, device, gelu
        self.fp8 = dtype == FP8
        self.p8 = frozenset(products) if self.fp8 else frozenset()
        # FP8 keeps its residual stream in float16 (float32 where FP8 is only emulated).
        stream = (torch.float16 if device != "cpu" else torch.float32) if self.fp8 else dtype
        assert isinstance(stream, torch.dtype)
        self.dtype: torch.dtype = stream
        self.heads = model.config.num_attention_heads
        self.use_kernels = kernels is not None and device != "cpu"
        model = model.to(device=device, dtype=torch.float32)
        base = model.base_model
        emb = base.embeddings
        self.word = emb.word_embeddings.weight.detach().to(self.dtype)
        # Token type 0 for every token (docq sends no token_type_ids): folded into positions.
        self.position = (
            emb.position_embeddings.weight.detach() + emb.token_type_embeddings.weight[0].detach()
        ).to(self.dtype)
        self.emb_norm = self._norm(emb.LayerNorm)
        self.layers = [
            Layer(
                qkv=Linear(*_fused_qkv(block.attention.self), self.dtype, "qkv" in self.p8),
                out=self._linear(block.attention.output.dense, "out"),
                norm1=self._norm(block.attention.output.LayerNorm),
                up=self._linear(block.intermediate.dense, "up"),
                down=self._linear(block.output.dense, "down"),
                norm2=self._norm(block.output.LayerNorm),
            )
            for block in base.encoder.layer
        ]
        if model.config.model_type == "bert":  # pooler (dense + tanh), then the classifier
            dense, proj = base.pooler.dense, model.classifier
        else:  # RobertaClassificationHead: dense + tanh, then out_proj
            dense, proj = model.classifier.dense, model.classifier.out_proj
        head_dtype: torch.dtype = torch.float16 if self.fp8 and device != "cpu" else self.dtype
        self.head = (
            Linear(dense.weight, dense.bias, head_dtype, False),
            Linear(proj.weight, proj.bias, head_dtype, False),
        )
        self.head_dtype = head_dtype
        self.varlen = device != "cpu" and varlen_attn is not None and self._varlen_dtype_ok()
        self.attention, self.attention_note = "flash", ""
        if attention == "cudnn" and self.varlen:
            self.attention_note = cudnn_refused(device, self.heads, self.config.hidden_size)
            self.attention = "flash" if self.attention_note else "cudnn"

    def _linear(self, layer: torch.nn.Linear, product: str) -> Linear:
        return Linear(layer.weight, layer.bias, self.dtype, product in self.p8)

    def _norm(self, norm: torch.nn.LayerNorm) -> Norm:
        return Norm(norm.weight.detach().float(), norm.bias.detach().float(), float(norm.eps))

    def _varlen_dtype_ok(self) -> bool:
        return self.fp8 or self.dtype in (torch.float16, torch.bfloat16)

    # --- the parts ------------------------------------------------------------------------

    def _add_norm(
        self, y: torch.Tensor, residual: torch.Tensor | None, norm: Norm, fp8: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """LayerNorm(y + residual) in the stream's dtype, and its FP8 rows when `fp8`."""
        if self.use_kernels:
            return kernels.add_layernorm(
                y, residual, norm.weight, norm.bias, norm.eps, self.dtype, fp8
            )
        x = y.float() if residual is None else y.float() + residual.float()
        out = F.layer_norm(x, (x.shape[-1],), norm.weight, norm.bias, norm.eps).to(self.dtype)
        return (out, *quantize_rows(out)) if fp8 else (out, None, None)

    def _attention(
        self,
        qkv: torch.Tensor,
        cu: torch.Tensor,
        cu_host: np.ndarray | None,
        longest: int,
        graphed: bool,
    ) -> torch.Tensor:
        tokens = qkv.shape[0]
        q, k, v = qkv.view(tokens, 3, self.heads, -1).unbind(1)
        if self.varlen:
            cudnn = self.attention == "cudnn" and not graphed  # cuDNN is not capturable
            attend = cudnn_varlen if cudnn else varlen_attn
            out = attend(q, k, v, cu, cu, longest, longest)
            assert isinstance(out, torch.Tensor)  # no auxiliary outputs were asked for
            return out.reshape(tokens, -1)
        # PyTorch's SDPA one sequence at a time (a CPU, or float32 on a GPU).
        assert cu_host is not None, "the per-sequence fallback needs the offsets on the host"
        out = torch.zeros((tokens, q.shape[1] * q.shape[2]), dtype=qkv.dtype, device=qkv.device)
        for start, end in zip(cu_host[:-1].tolist(), cu_host[1:].tolist(), strict=True):
            sq, sk, sv = (t[start:end].transpose(0, 1).unsqueeze(0) for t in (q, k, v))
            seq = F.scaled_dot_product_attention(sq, sk, sv)  # [1, heads, length, head_dim]
            out[start:end] = seq[0].transpose(0, 1).reshape(end - start, -1)
        return out

    def _ffn(
        self, layer: Layer, x: torch.Tensor, x8: torch.Tensor | None, s8: torch.Tensor | None
    ) -> torch.Tensor:
        if layer.up.fp8:
            assert x8 is not None and s8 is not None
            h = layer.up.scaled(x8, s8, bias=False)
            if not layer.down.fp8:  # GELU(h + b) in the stream's dtype for an FP16 product
                return layer.down(F.gelu(h.float() + layer.up.bias.float()).to(self.dtype))
            if self.use_kernels:
                h8, hs = kernels.gelu_quantize(h, layer.up.bias)
            else:
                h8, hs = quantize_rows(F.gelu(h.float() + layer.up.bias.float()))
            return layer.down.scaled(h8, hs)
        h = layer.up.gelu_tanh(x) if self.gelu == "tanh" else F.gelu(layer.up(x))
        return self._product(layer.down, h)

    def _product(self, linear: Linear, x: torch.Tensor) -> torch.Tensor:
        """`linear(x)` for an input no kernel quantized: rounded to FP8 here for an FP8
        product, cast to the stream's dtype (from attention's BF16) for an FP16 one."""
        if linear.fp8:
            x8, scale = kernels.quantize(x) if self.use_kernels else quantize_rows(x)
            return linear.scaled(x8, scale)
        return linear(x.to(self.dtype))

    # --- the forward pass ----------------------------------------------------------------

    @torch.inference_mode()
    def forward(
        self,
        ids: torch.Tensor,
        pos: torch.Tensor,
        cu: torch.Tensor,
        first: torch.Tensor,
        longest: int,
        cu_host: np.ndarray | None = None,
        graphed: bool = False,
    ) -> torch.Tensor:
        """Logits (float32, [len(first), labels]) of the sequences `cu` cuts `ids` into.

        `ids`, `pos`: [tokens] int64 on the device (tokens past cu[-1] belong to no sequence
        and are never read back); `cu`: int32 offsets; `first`: each sequence's first token
        index; `longest`: an upper bound of the sequence lengths (the attention grid);
        `graphed`: the call is being captured in a CUDA graph (attention runs flash)."""
        qkv8, up8 = "qkv" in self.p8, "up" in self.p8
        x, x8, s8 = self._add_norm(
            F.embedding(ids, self.word), F.embedding(pos, self.position), self.emb_norm, qkv8
        )
        for layer in self.layers:
            if qkv8:
                assert x8 is not None and s8 is not None
                qkv = layer.qkv.scaled(x8, s8)
            else:
                qkv = layer.qkv(x)
            y = self._product(layer.out, self._attention(qkv, cu, cu_host, longest, graphed))
            x, x8, s8 = self._add_norm(y, x, layer.norm1, up8)
            y = self._ffn(layer, x, x8, s8)
            x, x8, s8 = self._add_norm(y, x, layer.norm2, qkv8)
        cls = x.index_select(0, first).to(self.head_dtype)
        dense, proj = self.head
        return proj(torch.tanh(dense(cls))).float()
