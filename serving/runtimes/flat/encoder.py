"""`FlatEncoder`: a sequence classifier's forward pass over `[tokens]` with sequence offsets,
built from the parts of this package (checkpoint, products, attention, gemm_plan).

Only each window's first token is read by the classifier, so the last layer runs the rest
of its work (attention's queries, the output product, the FFN, both norms) for those
tokens alone: its keys and values still come from every token.

`gelu` picks the FFN's activation: `erf` (the checkpoint's exact GELU) or `tanh` (the
tanh approximation inside the cuBLASLt epilogue of the first FFN product, one pass fewer
over a [tokens, 4 x hidden] tensor); the parity gate decides whether tanh may serve.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import attention as attn
from .checkpoint import Layer, Norm, fused_qkv, unsupported
from .gemm_plan import GEMMS, gemm_plan
from .products import FP8, PRODUCTS, TOKEN_ALIGN, Linear, quantize_rows

try:  # the row kernels (LayerNorm, GELU, FP8 rows): CUDA hosts with OpenAI Triton
    from ..kernels import rowwise
except ImportError:  # pragma: no cover - depends on the host
    rowwise = None  # type: ignore[assignment]


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
        dense_len: int = 512,
        small_attention: str = "flash",
        gemm: str = "cublas",
    ) -> None:
        reason = unsupported(model.config)
        if reason:
            raise ValueError(reason)
        if gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be 'erf' or 'tanh', not {gelu!r}")
        if attention not in attn.ATTENTION:
            raise ValueError(f"attention must be one of {attn.ATTENTION}, not {attention!r}")
        if small_attention not in attn.SMALL_ATTENTION:
            raise ValueError(
                f"small_attention must be one of {attn.SMALL_ATTENTION}, not {small_attention!r}"
            )
        if gemm not in GEMMS:
            raise ValueError(f"gemm must be one of {GEMMS}, not {gemm!r}")
        self.config, self.device, self.gelu = model.config, device, gelu
        self.fp8 = dtype == FP8
        self.p8 = frozenset(products) if self.fp8 else frozenset()
        # FP8 keeps its residual stream in float16 (float32 where FP8 is only emulated).
        stream = (torch.float16 if device != "cpu" else torch.float32) if self.fp8 else dtype
        assert isinstance(stream, torch.dtype)
        self.dtype: torch.dtype = stream
        self.heads = model.config.num_attention_heads
        self.use_kernels = rowwise is not None and device != "cpu"
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
                qkv=Linear(*fused_qkv(block.attention.self), self.dtype, "qkv" in self.p8),
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
        self.varlen = device != "cpu" and attn.varlen_attn is not None and self._varlen_dtype_ok()
        self.attention, self.attention_note, self.dense_len = "flash", "", dense_len
        if attention == "cudnn" and self.varlen:
            hidden = self.config.hidden_size
            self.attention_note = attn.cudnn_refused(device, self.heads, hidden, dense_len)
            self.attention = "flash" if self.attention_note else "cudnn"
        self.small_attention, self.small_attention_note = "flash", ""
        if small_attention == "triton":
            hidden = self.config.hidden_size
            self.small_attention_note = (
                attn.triton_refused(device, self.heads, hidden, dense_len)
                if self.varlen and self.use_kernels
                else "needs CUDA and OpenAI Triton"
            )
            self.small_attention = "flash" if self.small_attention_note else "triton"
        self.gemm, self.gemm_note = "cublas", ""
        if gemm == "triton":  # the tiles are chosen by plan_gemms, which needs a batch size
            halves = (torch.float16, torch.bfloat16)  # float32 would run TF32 in tl.dot
            ready = self.use_kernels and not self.fp8 and self.dtype in halves
            self.gemm_note = "" if ready else "needs CUDA, OpenAI Triton and FP16 or BF16"
            self.gemm = "cublas" if self.gemm_note else "triton"

    def plan_gemms(self, tokens: int) -> list[str]:
        """With `gemm` triton, choose docq's GEMM or cuBLAS for each of a layer's products
        (gemm_plan, on the first layer's weights; every layer's product of that kind
        follows), for batches of up to `tokens` tokens: what was chosen, and why."""
        if self.gemm != "triton":
            return []
        notes = []
        for product in PRODUCTS:
            first = getattr(self.layers[0], product)
            gelu = product == "up" and self.gelu == "tanh"
            tiles, fewest, note = gemm_plan(first, gelu, tokens, self.device)
            for layer in self.layers:
                linear = getattr(layer, product)
                linear.tiles, linear.min_tokens = tiles, fewest
            notes.append(f"{product}: {note}")
        return notes

    def warm_dense(self, windows: int) -> float:
        """Build cuDNN's plan for every block of 1 to `windows` full windows (torch caches
        one per shape; a plan costs tens of milliseconds the first time): seconds taken."""
        if self.attention != "cudnn":
            return 0.0
        start = time.perf_counter()
        width = 3 * self.config.hidden_size
        dtype = torch.bfloat16 if "qkv" in self.p8 else self.dtype  # what the qkv product gives
        qkv = torch.zeros((windows * self.dense_len, width), dtype=dtype, device=self.device)
        for n in range(1, windows + 1):
            attn.cudnn_dense(*attn.blocks(qkv, self.heads, n, self.dense_len))
        torch.cuda.synchronize(self.device)
        return time.perf_counter() - start

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
            return rowwise.add_layernorm(
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
        dense: int = 0,
    ) -> list[torch.Tensor]:
        """Attention's output for every token, as row blocks in token order: one, or the
        `dense` leading full windows (cuDNN) and the rest (flash)."""
        tokens = qkv.shape[0]
        q, k, v = qkv.view(tokens, 3, self.heads, -1).unbind(1)
        if self.varlen:
            if dense and self.attention == "cudnn" and not graphed:  # not capturable
                split = dense * self.dense_len
                block = attn.cudnn_dense(*attn.blocks(qkv, self.heads, dense, self.dense_len))
                pieces = [block.transpose(1, 2).reshape(split, -1)]  # a view: laid out as q
                windows = cu.shape[0] - 1
                if windows > dense:  # the shorter windows, then tokens of no window
                    rest = cu[dense:] - split
                    out = attn.varlen_attn(
                        q[split:], k[split:], v[split:], rest, rest, longest, longest
                    )
                    assert isinstance(out, torch.Tensor)
                    pieces.append(out.reshape(tokens - split, -1))
                elif tokens > split:  # tokens past the last window are never read back
                    pieces.append(qkv.new_zeros((tokens - split, pieces[0].shape[1])))
                return pieces
            if graphed and self.small_attention == "triton":
                out = attn.triton_kernel.varlen_attention(q, k, v, cu, longest)
            else:
                out = attn.varlen_attn(q, k, v, cu, cu, longest, longest)
            assert isinstance(out, torch.Tensor)  # no auxiliary outputs were asked for
            return [out.reshape(tokens, -1)]
        assert cu_host is not None, "the per-window fallback needs the offsets on the host"
        bounds = cu_host.tolist()
        return [attn.sdpa_per_window(q, k, v, bounds, bounds).reshape(tokens, -1)]

    def _first_attention(
        self,
        qkv: torch.Tensor,
        cu: torch.Tensor,
        first: torch.Tensor,
        cu_host: np.ndarray | None,
        longest: int,
    ) -> torch.Tensor:
        """Attention's output at each window's first token (`first`, its index) only
        ([windows, hidden]): the last layer's, whose other tokens nothing reads."""
        tokens, windows = qkv.shape[0], cu.shape[0] - 1
        q, k, v = qkv.view(tokens, 3, self.heads, -1).unbind(1)
        first = q.index_select(0, first)
        if self.varlen:
            one = torch.arange(windows + 1, dtype=torch.int32, device=qkv.device)
            out = attn.varlen_attn(first, k, v, one, cu, 1, longest)
            assert isinstance(out, torch.Tensor)
            return out.reshape(windows, -1)
        assert cu_host is not None, "the per-window fallback needs the offsets on the host"
        one_each = list(range(windows + 1))
        return attn.sdpa_per_window(first, k, v, one_each, cu_host.tolist()).reshape(windows, -1)

    def _project(self, linear: Linear, pieces: list[torch.Tensor]) -> torch.Tensor:
        """`linear` over row blocks as over their concatenation: each block's product
        written into its rows of one output (FP8 products join the blocks first)."""
        if len(pieces) == 1 or linear.fp8:
            return self._product(linear, pieces[0] if len(pieces) == 1 else torch.cat(pieces))
        rows = sum(p.shape[0] for p in pieces)
        out = pieces[0].new_empty((rows, linear.weight.shape[0]), dtype=self.dtype)
        start = 0
        for piece in pieces:
            linear.into(piece.to(self.dtype), out[start : start + piece.shape[0]])
            start += piece.shape[0]
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
                h8, hs = rowwise.gelu_quantize(h, layer.up.bias)
            else:
                h8, hs = quantize_rows(F.gelu(h.float() + layer.up.bias.float()))
            return layer.down.scaled(h8, hs)
        h = layer.up.gelu_tanh(x) if self.gelu == "tanh" else F.gelu(layer.up(x))
        return self._product(layer.down, h)

    def _product(self, linear: Linear, x: torch.Tensor) -> torch.Tensor:
        """`linear(x)` for an input no kernel quantized: rounded to FP8 here for an FP8
        product, cast to the stream's dtype (from attention's BF16) for an FP16 one."""
        if linear.fp8:
            x8, scale = rowwise.quantize(x) if self.use_kernels else quantize_rows(x)
            return linear.scaled(x8, scale)
        return linear(x.to(self.dtype))

    # --- the forward pass ----------------------------------------------------------------

    @torch.inference_mode()
    def forward(
        self,
        ids: torch.Tensor,
        pos: torch.Tensor,
        cu: torch.Tensor,
        order: torch.Tensor,
        longest: int,
        cu_host: np.ndarray | None = None,
        graphed: bool = False,
        dense: int = 0,
    ) -> torch.Tensor:
        """Logits (float32, [len(order), labels]) of the windows `cu` cuts `ids` into.

        `ids`, `pos`: [tokens] int64 on the device (tokens past cu[-1] belong to no window
        and are never read back); `cu`: int32 offsets; `order`: the windows in the order
        their logits are returned, as indices into cu's; `longest`: an upper bound of the
        window lengths (the attention grid); `graphed`: the call is being captured in a CUDA
        graph (attention runs flash, or small_attention's kernel); `dense`: how many leading
        windows are `dense_len` tokens long (with `attention` cudnn, one cuDNN block)."""
        qkv8, up8 = "qkv" in self.p8, "up" in self.p8
        x, x8, s8 = self._add_norm(
            F.embedding(ids, self.word), F.embedding(pos, self.position), self.emb_norm, qkv8
        )
        last = len(self.layers) - 1
        for index, layer in enumerate(self.layers):
            if qkv8:
                assert x8 is not None and s8 is not None
                qkv = layer.qkv.scaled(x8, s8)
            else:
                qkv = layer.qkv(x)
            if index < last:
                pieces = self._attention(qkv, cu, cu_host, longest, graphed, dense)
            else:  # from here on only each window's first token is read
                windows = cu.shape[0] - 1
                rows = -(-windows // TOKEN_ALIGN) * TOKEN_ALIGN  # FP8 products: 16 rows at a time
                # An empty window (a graph's unused ones start at the end) reads the last token.
                first = cu[:-1].clamp(max=qkv.shape[0] - 1)
                x = x.index_select(0, F.pad(first, (0, rows - windows)))
                attended = self._first_attention(qkv, cu, first, cu_host, longest)
                pieces = [F.pad(attended, (0, 0, 0, rows - windows))]
            y = self._project(layer.out, pieces)
            x, x8, s8 = self._add_norm(y, x, layer.norm1, up8)
            y = self._ffn(layer, x, x8, s8)
            x, x8, s8 = self._add_norm(y, x, layer.norm2, qkv8)
        cls = x.index_select(0, order).to(self.head_dtype)
        pool, proj = self.head
        return proj(torch.tanh(pool(cls))).float()
