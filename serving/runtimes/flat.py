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

`small_attention` picks the kernel of the small batches' CUDA graphs: `flash` (FA2's
varlen) or `triton` (docq_kernels.varlen_attention: query blocks of 64 rows, twice FA2's
programs for a window, for batches of a few windows that leave FA2's grid half the GPU);
checked against flash at load, flash where it differs or cannot run.

`gemm` picks the large batches' matrix products: `cublas` (F.linear, cuBLASLt with the bias
and the tanh GELU in its epilogue) or `triton`: docq_kernels.linear, a persistent TMA GEMM,
timed against cuBLAS at load for each of a layer's four products and each of its tilings
(`plan_gemms`), and kept per product where it is faster at the largest batch, for batches of
as many tokens down to where it stops being faster (never under GEMM_MIN_TOKENS: the small
batches' graphs keep cuBLAS); cuBLAS elsewhere, the reasons in the server's log.

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

Only each window's first token is read by the classifier, so the last layer runs the rest
of its work (attention's queries, the output product, the FFN, both norms) for those
tokens alone: its keys and values still come from every token.

`gelu` picks the FFN's activation: `erf` (the checkpoint's exact GELU) or `tanh` (the
tanh approximation inside the cuBLASLt epilogue of the first FFN product, one pass fewer
over a [tokens, 4 x hidden] tensor); the parity gate decides whether tanh may serve.

Where CUDA or OpenAI Triton is missing the same maths runs in PyTorch ops (attention as
SDPA per sequence, FP8 emulated by rounding to float8 and computing in float32), so the
offsets, the weight layout and the quantization are tested on a CPU.
"""

from __future__ import annotations

import functools
import itertools
import statistics
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
SMALL_ATTENTION = ("flash", "triton")
GEMMS = ("cublas", "triton")
GEMM_MIN_TOKENS = 8192  # docq's GEMM never runs fewer rows: the graphs' batches keep cuBLAS
GEMM_GAIN = 0.97  # it must take at most this share of cuBLAS's time to be kept
GEMM_ROUNDS = 5  # docq's GEMM and cuBLAS timed in turn this often: the median ratio decides
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
    index = np.arange(ids.size, dtype=np.int64) - starts  # each token's index in its window
    if config.model_type == "bert":
        return index
    pad = int(config.pad_token_id)
    real = ids != pad
    if real.all():  # no padding id among the tokens (the flat batch holds real ones): count
        return index + (pad + 1)
    real = real.astype(np.int64)
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
    cudnn_s, flash_s = (_seconds_per_call(fn, device) for fn in (dense, flash))
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
        got = kernels.varlen_attention(q, k, v, cu, length)
    except Exception as exc:  # a compiler or launch failure: the kernel cannot serve here
        return f"the Triton kernel failed: {str(exc).splitlines()[0][:200]}"
    want = varlen_attn(q, k, v, cu, cu, length, length)
    assert isinstance(want, torch.Tensor)
    diff = float((got.float() - want.float()).abs().max())
    return "" if diff < 1e-2 else f"the Triton kernel differs from flash by {diff:.3g}"


def _seconds_per_call(fn: Any, device: str, calls: int = 5) -> float:
    """Wall seconds per call of `fn()` after one warm-up, host work included."""
    fn()
    sync = torch.cuda.synchronize if device != "cpu" else (lambda *_: None)
    sync(device)
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync(device)
    return (time.perf_counter() - start) / calls


def _ratio(ours: Any, theirs: Any, device: str) -> tuple[float, float, float]:
    """docq's time over cuBLAS's as the median of GEMM_ROUNDS rounds that time each in turn,
    so that one noisy call decides nothing (on an H100 a single timing had docq's GEMM 10%
    faster at a product where 20 repeats had it 8% slower); and each one's median time."""
    a, b = [], []
    for _ in range(GEMM_ROUNDS):
        a.append(_seconds_per_call(ours, device, 20))
        b.append(_seconds_per_call(theirs, device, 20))
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    return statistics.median(ratios), statistics.median(a), statistics.median(b)


def gemm_plan(linear: Linear, gelu: bool, tokens: int, device: str) -> tuple[Any, int, str]:
    """docq's GEMM for `linear`'s product where it beats cuBLAS here: (its tiles, the fewest
    rows it runs for, what was measured), or (None, 0, why cuBLAS stays).

    Each tiling of docq_kernels.TILINGS runs once at `tokens` rows and once at a ragged
    count, and is dropped where it fails (a compiler or launch error) or differs from
    cuBLAS; the fastest at `tokens` is kept if it takes at most GEMM_GAIN of cuBLAS's time
    (the median of GEMM_ROUNDS alternating rounds), then compared so at half as many rows,
    and half again, down to GEMM_MIN_TOKENS: it runs for as few rows as it stayed faster."""
    if tokens < GEMM_MIN_TOKENS:
        return None, 0, f"cuBLAS: no batch reaches {GEMM_MIN_TOKENS} tokens"
    linear.tiles = None  # cuBLAS while it is measured
    gen = torch.Generator(device=device).manual_seed(0)
    width = linear.weight.shape[1]
    x = torch.randn((tokens, width), generator=gen, device=device).to(linear.weight.dtype)

    def cublas(rows: int) -> torch.Tensor:  # the tiles are set only once this returns
        return linear.gelu_tanh(x[:rows]) if gelu else linear(x[:rows])

    def own(tiles: Any, rows: int) -> torch.Tensor:
        return kernels.linear(x[:rows], linear.weight, linear.bias, tiles, gelu)  # type: ignore[no-any-return]

    timed: dict[Any, float] = {}
    dropped: list[str] = []
    for tiles in kernels.TILINGS:
        try:
            for rows in (tokens, tokens - 77):  # the last row block part-full
                want = cublas(rows).float()
                diff = float((own(tiles, rows).float() - want).abs().max())
                if not diff <= 1e-2 * max(1.0, float(want.abs().max())):
                    raise ArithmeticError(f"differs from cuBLAS by {diff:.3g}")
        except Exception as exc:  # a compiler or launch failure, or wrong sums
            dropped.append(f"{tiles} {str(exc).splitlines()[0][:120]}")
            continue
        timed[tiles] = _seconds_per_call(functools.partial(own, tiles, tokens), device, 20)
    said = f" (dropped: {'; '.join(dropped)})" if dropped else ""
    if not timed:
        return None, 0, f"cuBLAS: no tiling ran{said}"
    best = min(timed, key=timed.__getitem__)

    def against(rows: int) -> tuple[float, float, float]:
        return _ratio(functools.partial(own, best, rows), functools.partial(cublas, rows), device)

    ratio, ours, base = against(tokens)
    measured = f"{ours * 1e3:.3f} ms against cuBLAS's {base * 1e3:.3f} at {tokens} tokens"
    if ratio > GEMM_GAIN:
        return None, 0, f"cuBLAS: docq's best, {best}, {measured}{said}"
    fewest, rows = tokens, tokens // 2
    while rows >= GEMM_MIN_TOKENS and against(rows)[0] <= GEMM_GAIN:
        fewest, rows = rows, rows // 2
    return best, fewest, f"docq's {best}, {measured}, from {fewest} tokens{said}"


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
        # docq's GEMM (docq_kernels.linear) with these tiles, for calls of at least
        # `min_tokens` rows, where plan_gemms found it faster than cuBLAS; else None.
        self.tiles: Any = None
        self.min_tokens = 0

    def _own(self, x: torch.Tensor) -> bool:
        """Whether docq's GEMM runs this call."""
        return self.tiles is not None and x.shape[0] >= self.min_tokens and kernels.tma_ready(x)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self._own(x):
            return kernels.linear(x, self.weight, self.bias, self.tiles)  # type: ignore[no-any-return]
        return F.linear(x, self.weight, self.bias)

    def into(self, x: torch.Tensor, out: torch.Tensor) -> None:
        """`self(x)` written into `out` (rows of a larger output: no copy to join them)."""
        if self._own(x) and kernels.tma_ready(out):
            kernels.linear(x, self.weight, self.bias, self.tiles, out=out)
        else:
            torch.addmm(self.bias, x, self.weight.t(), out=out)

    def gelu_tanh(self, x: torch.Tensor) -> torch.Tensor:
        """GELU (tanh form) of the product, inside the GEMM's epilogue on CUDA."""
        if self._own(x):
            return kernels.linear(x, self.weight, self.bias, self.tiles, gelu=True)  # type: ignore[no-any-return]
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
        dense_len: int = 512,
        small_attention: str = "flash",
        gemm: str = "cublas",
    ) -> None:
        reason = unsupported(model.config)
        if reason:
            raise ValueError(reason)
        if gelu not in ("erf", "tanh"):
            raise ValueError(f"gelu must be 'erf' or 'tanh', not {gelu!r}")
        if attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, not {attention!r}")
        if small_attention not in SMALL_ATTENTION:
            raise ValueError(
                f"small_attention must be one of {SMALL_ATTENTION}, not {small_attention!r}"
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
        self.attention, self.attention_note, self.dense_len = "flash", "", dense_len
        if attention == "cudnn" and self.varlen:
            hidden = self.config.hidden_size
            self.attention_note = cudnn_refused(device, self.heads, hidden, dense_len)
            self.attention = "flash" if self.attention_note else "cudnn"
        self.small_attention, self.small_attention_note = "flash", ""
        if small_attention == "triton":
            hidden = self.config.hidden_size
            self.small_attention_note = (
                triton_refused(device, self.heads, hidden, dense_len)
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
            cudnn_dense(*blocks(qkv, self.heads, n, self.dense_len))
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
        dense: int = 0,
    ) -> list[torch.Tensor]:
        """Attention's output for every token, as row blocks in token order: one, or the
        `dense` leading full windows (cuDNN) and the rest (flash)."""
        tokens = qkv.shape[0]
        q, k, v = qkv.view(tokens, 3, self.heads, -1).unbind(1)
        if self.varlen:
            if dense and self.attention == "cudnn" and not graphed:  # not capturable
                split = dense * self.dense_len
                block = cudnn_dense(*blocks(qkv, self.heads, dense, self.dense_len))
                pieces = [block.transpose(1, 2).reshape(split, -1)]  # a view: laid out as q
                windows = cu.shape[0] - 1
                if windows > dense:  # the shorter windows, then tokens of no window
                    rest = cu[dense:] - split
                    out = varlen_attn(q[split:], k[split:], v[split:], rest, rest, longest, longest)
                    assert isinstance(out, torch.Tensor)
                    pieces.append(out.reshape(tokens - split, -1))
                elif tokens > split:  # tokens past the last window are never read back
                    pieces.append(qkv.new_zeros((tokens - split, pieces[0].shape[1])))
                return pieces
            if graphed and self.small_attention == "triton":
                out = kernels.varlen_attention(q, k, v, cu, longest)
            else:
                out = varlen_attn(q, k, v, cu, cu, longest, longest)
            assert isinstance(out, torch.Tensor)  # no auxiliary outputs were asked for
            return [out.reshape(tokens, -1)]
        assert cu_host is not None, "the per-window fallback needs the offsets on the host"
        bounds = cu_host.tolist()
        return [sdpa_per_window(q, k, v, bounds, bounds).reshape(tokens, -1)]

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
            out = varlen_attn(first, k, v, one, cu, 1, longest)
            assert isinstance(out, torch.Tensor)
            return out.reshape(windows, -1)
        assert cu_host is not None, "the per-window fallback needs the offsets on the host"
        one_each = list(range(windows + 1))
        return sdpa_per_window(first, k, v, one_each, cu_host.tolist()).reshape(windows, -1)

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
