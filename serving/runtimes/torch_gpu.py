"""Triton Python-backend model for the `torch-gpu` runtime: PyTorch FP16 on a GPU.

Copied to `model_repository/<name>/<version>/model.py` by `docq convert --runtime torch-gpu`,
beside the Hugging Face checkpoint (`config.json`, `model.safetensors`) it loads. It is what
this project can build and measure on a GPU host without TensorRT.

An instance of kind GPU runs on its device in the precision of the `dtype` parameter
(float16 by default). Small batches replay CUDA graphs (parameter `cuda_graphs`, on by
default), all captured at load, so that a request costs one graph launch instead of
hundreds of kernel launches; a batch is padded up to its bucket (padding rows are dropped,
padding columns masked). Batch buckets are the powers of two below `graph_batch_step`, then
its multiples, up to `graph_max_batch`; length buckets are multiples of `graph_seq_step`
up to max_seq_len. Larger batches run eagerly (docs/gpu-engine.md, measured on an H200):

- a graph holds the attention mask it was captured with, and with a mask SDPA cannot run
  flash attention (it runs the memory-efficient kernel): at 64 x 512 tokens a replay took
  62 ms against 50 ms eager, where an all-ones mask is dropped and flash runs. Graphs
  captured without a mask were slower still (190 ms: SDPA's math path in FP32), so none
  are captured;
- past 8 rows of 512 tokens the GPU time covers the launches, and eager wins (9 rows:
  10.9 ms eager, 15.4 ms replayed in the 16-row graph).

Eager calls pass no mask when every row is full (flash attention). Graph inputs are staged
in pinned host buffers and copied in one transfer per input. `sdpa_backend` (flash, cudnn,
efficient, math; empty: PyTorch's choice) puts one attention kernel first.
Logits go back as a CPU torch tensor, through DLPack (docq_execute).

With `overlap` (on by default for GPU instances), execute() of an eager batch returns once
the batch is queued on the GPU and its logits' copy back enqueued, and a responder thread
(docq_execute) waits for that copy and answers; the next execute()'s host work (reading
the requests, the flat layout, staging, the launches) then runs while this batch's kernels
do, instead of leaving the GPU idle for it (docs/gpu-engine.md: 1.3-2.3 ms a large call on
the H200). A small batch (a graph replay) is answered in execute() itself: one request at
a time has no next batch to overlap, and the responder's hop cost (1, 512) 0.45 ms on the
H200. Everything a batch reads lives in buffers a later batch cannot overwrite first: its
inputs in one of two pinned host slots (a slot is reused only after its copy ran), the
device buffers and graph outputs in stream order, its logits in host memory of their own.

An instance of kind CPU runs float32 eagerly on the CPU, so that the same file can be
served, and tested, by the CPU-only tritonserver.
The model is written self-contained: it runs inside the stub, not inside docq.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import docq_flat as flat  # copied beside this file
import numpy as np
import torch
from docq_execute import Responder, execute, parameter  # copied beside this file
from transformers import AutoModelForSequenceClassification

DTYPES: dict[str, torch.dtype | str] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "fp8": "fp8",  # the flat engine's FP8 products (docq_flat.py)
}
ENGINES = ("flat", "hf")


def device_and_dtype(args: dict[str, str], config: dict[str, Any]) -> tuple[str, Any]:
    """Where and in what precision this instance runs (GPU: `dtype`; CPU: float32, or FP8
    emulated in float32 where `dtype` is fp8, so that a CPU server serves the same maths)."""
    dtype = DTYPES[parameter(config, "dtype", "float16")]
    if args.get("model_instance_kind") == "GPU":
        return f"cuda:{args.get('model_instance_device_id', '0')}", dtype
    return "cpu", dtype if dtype == "fp8" else torch.float32


def load(folder: Path, device: str, dtype: torch.dtype) -> torch.nn.Module:
    """The checkpoint in `folder`, in eval mode, on `device` in `dtype`."""
    model = AutoModelForSequenceClassification.from_pretrained(
        str(folder), local_files_only=True, dtype=dtype
    )
    return model.to(device=device, dtype=dtype).eval()


def buckets(limit: int, step: int | None = None) -> list[int]:
    """Sizes graphs are captured for: multiples of `step` (powers of two without one) up to
    `limit`, and `limit` itself."""
    if step:
        sizes = list(range(step, limit, step))
    else:
        sizes = [1 << i for i in range(limit.bit_length()) if 1 << i < limit]
    return [*sizes, limit]


def batch_buckets(limit: int, step: int) -> list[int]:
    """Batch sizes graphs are captured for: powers of two below `step`, then multiples of
    `step` up to `limit` (a batch pads to at most step - 1 rows more than it has)."""
    if step < 1:
        return buckets(limit)
    small = [b for b in buckets(limit) if b < step]
    return sorted({*small, *(buckets(limit, step) if step < limit else [limit])})


def attention(backend: str) -> contextlib.AbstractContextManager[Any]:
    """A context that puts SDPA's `backend` first (the others stay as fallbacks)."""
    if not backend:
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = {
        "flash": SDPBackend.FLASH_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "math": SDPBackend.MATH,
    }
    order = [names[backend], *(b for b in names.values() if b is not names[backend])]
    return sdpa_kernel(order, set_priority=True)


def full(attention_mask: np.ndarray) -> bool:
    """Whether every position of the batch is a real token (no mask is needed)."""
    return bool(attention_mask.all())


class CudaGraphs:
    """The model captured as one CUDA graph per (batch, length) bucket, replayed per call.

    Every graph reads its own static input tensors and shares one memory pool for its
    activations. Sharing is safe here because one instance runs one call at a time and each
    call copies its logits out before the next replay can overwrite the pool.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        device: str,
        max_batch: int,
        max_len: int,
        step: int,
        batch_step: int = 8,
        backend: str = "",
    ) -> None:
        self.model, self.device, self.backend = model, device, backend
        self.batches = batch_buckets(max_batch, batch_step)
        self.lengths = buckets(max_len, step)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[tuple[int, int], tuple[Any, torch.Tensor, torch.Tensor, Any]] = {}
        # Pinned staging: one asynchronous transfer per input, from page-locked memory.
        size = self.batches[-1] * self.lengths[-1]
        self.host_ids = torch.zeros(size, dtype=torch.int64).pin_memory()
        self.host_mask = torch.zeros(size, dtype=torch.int64).pin_memory()
        self.host_out: torch.Tensor | None = None  # sized at the first capture (labels)

    @torch.inference_mode()
    def capture_all(self) -> None:
        # Largest first: the shared pool is sized by the first (biggest) capture.
        for rows in reversed(self.batches):
            for length in reversed(self.lengths):
                self._capture(rows, length, warmups=1 if self.graphs else 2)

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        with attention(self.backend):
            return self.model(input_ids=ids, attention_mask=mask).logits.float()

    def _capture(self, rows: int, length: int, warmups: int) -> None:
        ids = torch.zeros((rows, length), dtype=torch.int64, device=self.device)
        mask = torch.ones_like(ids)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for _ in range(warmups):
                self._forward(ids, mask)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            logits = self._forward(ids, mask)
        if self.host_out is None:
            self.host_out = torch.empty(
                (self.batches[-1], logits.shape[1]), dtype=torch.float32
            ).pin_memory()
        self.graphs[(rows, length)] = (graph, ids, mask, logits)

    def fits(self, rows: int, length: int) -> bool:
        return rows <= self.batches[-1] and length <= self.lengths[-1]

    def _stage(self, host: torch.Tensor, array: np.ndarray, shape: tuple[int, int]) -> torch.Tensor:
        """`array` zero-padded to `shape` in the pinned buffer `host` (a view of it)."""
        staged = host[: shape[0] * shape[1]].view(shape)
        view = staged.numpy()
        rows, length = array.shape
        view[:rows, :length] = array
        view[:rows, length:] = 0
        view[rows:] = 0
        return staged

    @torch.inference_mode()
    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> torch.Tensor:
        rows, length = input_ids.shape
        shape = (
            next(b for b in self.batches if b >= rows),
            next(n for n in self.lengths if n >= length),
        )
        graph, ids, mask, logits = self.graphs[shape]
        ids.copy_(self._stage(self.host_ids, input_ids, shape), non_blocking=True)
        mask.copy_(self._stage(self.host_mask, attention_mask, shape), non_blocking=True)
        graph.replay()
        assert self.host_out is not None
        out = self.host_out[:rows]
        out.copy_(logits[:rows], non_blocking=True)
        torch.cuda.current_stream(self.device).synchronize()
        return out.clone()  # the pinned buffer is the next call's


class Staging:
    """One execute()'s flat inputs in a pinned host buffer, copied in one transfer.

    Layout for `tokens` and `windows`: ids [tokens] | positions [tokens] | offsets
    [windows + 1] | order [windows], all int64 (the offsets become int32 on the device;
    `order`: each request window's index among the laid-out ones). Tokens past the batch's
    own are id 0 at position 0 in no window; windows past its own are empty (offsets repeat
    the last) and their logits, read from window 0, are dropped.

    On a GPU the host buffer is one of two slots, used in turn: the next batch is staged
    while this one's copy may still wait behind the kernels of the one before (overlap),
    and a slot is written only once its last copy ran (an event says so)."""

    def __init__(self, tokens: int, windows: int, device: str) -> None:
        self.capacity, self.device = (tokens, windows), device
        size = 2 * tokens + 2 * windows + 1
        self.device_buffer = torch.zeros(size, dtype=torch.int64)
        self.hosts = [self.device_buffer]  # a CPU instance reads the host buffer itself
        self.copied: list[Any] = [None]
        if device != "cpu":
            self.hosts = [torch.zeros(size, dtype=torch.int64).pin_memory() for _ in range(2)]
            self.copied = [torch.cuda.Event() for _ in self.hosts]
            self.device_buffer = torch.zeros(size, dtype=torch.int64, device=device)
        self.turn = 0

    @staticmethod
    def views(buffer: torch.Tensor, tokens: int, windows: int) -> tuple[torch.Tensor, ...]:
        """ids, positions, offsets, order: views of `buffer` laid out as above."""
        ids, pos, cu, order = buffer[: 2 * tokens + 2 * windows + 1].split(
            [tokens, tokens, windows + 1, windows]
        )
        return ids, pos, cu, order

    def stage(
        self,
        ids: np.ndarray,
        pos: np.ndarray,
        cu: np.ndarray,
        tokens: int,
        windows: int,
        order: np.ndarray | None = None,
    ) -> tuple[torch.Tensor, ...]:
        """The inputs laid out for `tokens` x `windows` on the device (one copy): views of
        the device buffer, the offsets still int64; `order` (None: as laid out) as
        flat.full_first gives it."""
        n, t = cu.size - 1, int(cu[-1])
        host, copied = self.hosts[self.turn], self.copied[self.turn]
        self.turn = (self.turn + 1) % len(self.hosts)
        if copied is not None:
            copied.synchronize()  # this slot's last copy has run (at once unless overlapped)
        h_ids, h_pos, h_cu, h_order = (v.numpy() for v in self.views(host, tokens, windows))
        h_ids[:t], h_ids[t:] = ids, 0
        h_pos[:t], h_pos[t:] = pos, 0
        h_cu[: n + 1], h_cu[n + 1 :] = cu, t
        h_order[:n], h_order[n:] = np.arange(n) if order is None else order, 0
        used = 2 * tokens + 2 * windows + 1
        if copied is not None:
            self.device_buffer[:used].copy_(host[:used], non_blocking=True)
            copied.record(torch.cuda.current_stream(self.device))
        return self.views(self.device_buffer, tokens, windows)


def window_capacities(few: int, max_windows: int) -> list[int]:
    """The window counts token graphs are captured for: `few` (a small batch of long
    windows, a document's) and `max_windows` (many short ones), at most max_windows.

    A graph's attention grid has a row of blocks per window it can hold, and the blocks of
    windows a batch lacks still launch and exit: at 1 x 512 on the H200 flash took 26.5 us
    a layer in a graph for 64 windows, 18 us for one, and a 128-window graph put 0.4 ms
    on a served (1, 512) call (docs/gpu-engine.md, 2026-12-04)."""
    return sorted({min(max(few, 1), max_windows), max_windows})


class TokenGraphs:
    """The flat encoder captured as one CUDA graph per token bucket (multiples of `step` up
    to `max_tokens`) and window capacity (`window_capacities`); replayed per call, in the
    graph of the batch's token bucket and the smallest capacity that holds its windows.

    A flat batch's shape is its token count, so 64 token buckets cover every small batch
    (the padded runtime needed one per rows x length); the second capacity keeps a batch
    of one window from running the grid of max_batch_size. Attention runs flash varlen
    inside the graph over the staged offsets, with the model's max_seq_len as its grid
    bound. The graphs share one memory pool: one instance runs one call at a time, and
    a call's logits are read (its copy back enqueued) before the next call replays."""

    def __init__(
        self, encoder: Any, device: str, max_tokens: int, step: int, max_windows: int,
        max_len: int, few_windows: int,
    ) -> None:  # fmt: skip
        self.encoder, self.device, self.max_len = encoder, device, max_len
        self.buckets = buckets(max_tokens, step)
        self.max_windows = max_windows
        self.capacities = window_capacities(few_windows, max_windows)
        self.staging = Staging(self.buckets[-1], max_windows, device)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[tuple[int, int], tuple[Any, torch.Tensor]] = {}

    def _forward(self, tokens: int, windows: int) -> torch.Tensor:
        ids, pos, cu64, order = self.staging.views(
            self.staging.device_buffer, self.buckets[-1], windows
        )
        return self.encoder.forward(
            ids[:tokens], pos[:tokens], cu64.to(torch.int32), order, self.max_len, graphed=True
        )

    @torch.inference_mode()
    def capture_all(self) -> float:
        """Capture every graph (the largest first: it sizes the shared pool); seconds taken."""
        start = time.perf_counter()
        for windows in reversed(self.capacities):
            for tokens in reversed(self.buckets):
                side = torch.cuda.Stream(self.device)
                side.wait_stream(torch.cuda.current_stream(self.device))
                with torch.cuda.stream(side):
                    for _ in range(1 if self.graphs else 2):
                        self._forward(tokens, windows)
                torch.cuda.current_stream(self.device).wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=self.pool):
                    logits = self._forward(tokens, windows)
                self.graphs[tokens, windows] = (graph, logits)
        torch.cuda.synchronize(self.device)
        return time.perf_counter() - start

    def fits(self, flat: Any) -> bool:
        return int(flat.cu[-1]) <= self.buckets[-1] and flat.windows <= self.max_windows

    def graph_for(self, tokens: int, windows: int) -> tuple[int, int]:
        """The (token bucket, window capacity) a batch of this size replays in."""
        return (
            next(b for b in self.buckets if b >= tokens),
            next(c for c in self.capacities if c >= windows),
        )

    @torch.inference_mode()
    def __call__(self, flat: Any, pos: np.ndarray) -> torch.Tensor:
        """The batch's logits on the device: the graph's own output, which the next replay
        overwrites (copy them back before)."""
        tokens, windows = self.graph_for(int(flat.cu[-1]), flat.windows)
        self.staging.stage(flat.ids, pos, flat.cu, self.buckets[-1], windows)
        graph, logits = self.graphs[tokens, windows]
        graph.replay()
        return logits[: flat.windows]


class TritonPythonModel:
    """Runs a Hugging Face sequence classifier on each execute()'s requests as one batch:
    flat (engine `flat`, the default for BERT-family checkpoints: real tokens only) or
    padded through transformers (engine `hf`, any other checkpoint)."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.device, self.dtype = device_and_dtype(args, config)
        if self.device == "cpu":
            torch.set_num_threads(int(parameter(config, "intra_op_threads", "1")))
        folder = Path(args["model_repository"]) / args["model_version"]
        checkpoint = json.loads((folder / "config.json").read_text())
        self.vocab_size = int(checkpoint["vocab_size"])
        self.backend = parameter(config, "sdpa_backend", "") if self.device != "cpu" else ""
        self.max_len = int(parameter(config, "max_seq_len", "512"))
        max_batch = int(config.get("max_batch_size", 0)) or 1
        self.graphs: CudaGraphs | TokenGraphs | None = None
        self.flat: Any = None
        overlap = parameter(config, "overlap", "true" if self.device != "cpu" else "false")
        self.responder = Responder() if overlap == "true" else None
        engine = parameter(config, "engine", "flat")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if engine == "flat" and flat.unsupported(SimpleNamespace(**checkpoint)) is None:
            model = load(folder, "cpu", torch.float32)
            self.flat = flat.FlatEncoder(
                model,
                self.device,
                self.dtype,
                parameter(config, "gelu", "erf"),
                flat.fp8_products(parameter(config, "fp8_products", "all")),
                parameter(config, "attention", "flash"),
                self.max_len,
                parameter(config, "small_attention", "flash"),
                parameter(config, "gemm", "cublas"),
            )
            if self.flat.small_attention_note:  # the stub's stderr goes to tritonserver's log
                note = self.flat.small_attention_note
                print(f"torch-gpu: small_attention=triton refused, flash runs: {note}",
                      file=sys.stderr)  # fmt: skip
            if self.flat.attention_note:
                note = self.flat.attention_note
                print(f"torch-gpu: attention=cudnn refused, flash runs: {note}", file=sys.stderr)
            elif self.flat.attention == "cudnn":
                seconds = self.flat.warm_dense(max_batch)
                print(f"torch-gpu: cuDNN plans for 1-{max_batch} windows: {seconds:.1f} s",
                      file=sys.stderr)  # fmt: skip
            if self.flat.gemm_note:
                print(f"torch-gpu: gemm=triton refused, cuBLAS runs: {self.flat.gemm_note}",
                      file=sys.stderr)  # fmt: skip
            elif self.flat.gemm == "triton":  # before the graphs: their batches keep cuBLAS
                start = time.perf_counter()
                notes = self.flat.plan_gemms(max_batch * self.max_len)
                print(f"torch-gpu: gemm=triton, planned in {time.perf_counter() - start:.1f} s: "
                      + "; ".join(notes), file=sys.stderr)  # fmt: skip
            self.flat_config = model.config
            del model
            graphs = self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true"
            if graphs and self.flat.varlen:
                few = min(max_batch, int(parameter(config, "graph_max_batch", "8")))
                self.graphs = TokenGraphs(
                    self.flat,
                    self.device,
                    few * self.max_len,
                    int(parameter(config, "graph_seq_step", "64")),
                    max_batch,
                    self.max_len,
                    few,
                )
                seconds, g = self.graphs.capture_all(), self.graphs
                print(f"torch-gpu: {len(g.graphs)} CUDA graphs ({len(g.buckets)} token buckets"
                      f" x windows {g.capacities}): {seconds:.1f} s", file=sys.stderr)  # fmt: skip
            self.staging = Staging(max_batch * self.max_len, max_batch, self.device)
            return
        if self.dtype == flat.FP8:
            raise ValueError("dtype fp8 needs the flat engine (a BERT-family checkpoint)")
        self.model = load(folder, self.device, self.dtype)
        if self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true":
            self.graphs = CudaGraphs(
                self.model,
                self.device,
                min(max_batch, int(parameter(config, "graph_max_batch", "8"))),
                self.max_len,
                int(parameter(config, "graph_seq_step", "64")),
                int(parameter(config, "graph_batch_step", "8")),
                self.backend,
            )
            self.graphs.capture_all()

    def execute(self, requests: list[Any]) -> list[Any] | None:
        """One response per request, in order (docq_execute joins them into one call); with
        `overlap`, sent from the responder's thread (None returned)."""
        # Ids are checked against the vocabulary before the run: on CUDA an out-of-range
        # embedding index is a device-side assert that poisons the context for good.
        return execute(
            requests,
            self._run_flat if self.flat is not None else self._run,
            "torch",
            vocab_size=self.vocab_size,
            invalid=(IndexError,),
            ragged=self.flat is not None,
            responder=self.responder,
        )

    def _back(self, logits: torch.Tensor, later: bool) -> Any:
        """The logits on the host: now, or (`later`, with `overlap`) a function that waits
        for them (their copy is enqueued behind the batch's kernels, into host memory of
        its own)."""
        if self.device == "cpu":
            host, done = logits, None
        else:
            host = logits.to("cpu", non_blocking=True)  # pinned, from torch's host allocator
            done = torch.cuda.Event()
            done.record(torch.cuda.current_stream(self.device))

        def wait() -> torch.Tensor:
            if done is not None:
                done.synchronize()  # without the GIL: the next execute() runs meanwhile
            return host

        return wait if later and self.responder is not None else wait()

    @torch.inference_mode()
    def _run_flat(self, batch: Any) -> Any:
        if isinstance(self.graphs, TokenGraphs) and self.graphs.fits(batch):
            pos = flat.positions(self.flat_config, batch.ids, batch.cu)
            return self._back(self.graphs(batch, pos), later=False)
        ids, cu, order, dense = batch.ids, batch.cu, None, 0
        if self.flat.attention == "cudnn":  # full windows first: one cuDNN block
            ids, cu, order, dense = flat.full_first(batch.ids, batch.cu, self.max_len)
        pos = flat.positions(self.flat_config, ids, cu)
        tokens = -(-int(cu[-1]) // flat.TOKEN_ALIGN) * flat.TOKEN_ALIGN
        ids_d, pos_d, cu_d, order_d = self.staging.stage(ids, pos, cu, tokens, batch.windows, order)
        logits = self.flat.forward(
            ids_d, pos_d, cu_d.to(torch.int32), order_d, batch.longest, cu, dense=dense
        )
        return self._back(logits, later=True)

    @torch.inference_mode()
    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> torch.Tensor:
        rows, longest = input_ids.shape
        if isinstance(self.graphs, CudaGraphs) and self.graphs.fits(rows, longest):
            return self.graphs(input_ids, attention_mask)
        ids = torch.from_numpy(input_ids).to(self.device, non_blocking=True)
        mask = None  # no mask when every row is full: flash attention
        if not full(attention_mask):
            mask = torch.from_numpy(attention_mask).to(self.device, non_blocking=True)
        with attention(self.backend):
            logits = self.model(input_ids=ids, attention_mask=mask).logits
        # FP16 logits are returned as FP32, the type config.pbtxt declares.
        return logits.float().cpu()

    def finalize(self) -> None:
        if self.responder is not None:
            self.responder.close()  # what is in flight is answered first
        self.graphs = None
        self.flat = None
        self.model = None  # type: ignore[assignment]
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
