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
up to max_seq_len. Larger batches run eagerly (bench/gpu/NOTES.md, measured on an H200):

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

An instance of kind CPU runs float32 eagerly on the CPU, so that the same file can be
served, and tested, by the CPU-only tritonserver.
The model is written self-contained: it runs inside the stub, not inside docq.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from docq_execute import execute, parameter  # copied beside this file
from transformers import AutoModelForSequenceClassification

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def device_and_dtype(args: dict[str, str], config: dict[str, Any]) -> tuple[str, torch.dtype]:
    """Where and in what precision this instance runs (GPU: `dtype`; CPU: float32)."""
    if args.get("model_instance_kind") == "GPU":
        return f"cuda:{args.get('model_instance_device_id', '0')}", DTYPES[
            parameter(config, "dtype", "float16")
        ]
    return "cpu", torch.float32


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


class TritonPythonModel:
    """Runs a Hugging Face sequence classifier; pads each execute()'s requests into one call."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.device, self.dtype = device_and_dtype(args, config)
        if self.device == "cpu":
            torch.set_num_threads(int(parameter(config, "intra_op_threads", "1")))
        folder = Path(args["model_repository"]) / args["model_version"]
        self.model = load(folder, self.device, self.dtype)
        self.vocab_size = int(json.loads((folder / "config.json").read_text())["vocab_size"])
        self.backend = parameter(config, "sdpa_backend", "") if self.device != "cpu" else ""
        self.graphs: CudaGraphs | None = None
        if self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true":
            self.graphs = CudaGraphs(
                self.model,
                self.device,
                min(
                    int(config.get("max_batch_size", 0)) or 1,
                    int(parameter(config, "graph_max_batch", "8")),
                ),
                int(parameter(config, "max_seq_len", "512")),
                int(parameter(config, "graph_seq_step", "64")),
                int(parameter(config, "graph_batch_step", "8")),
                self.backend,
            )
            self.graphs.capture_all()

    def execute(self, requests: list[Any]) -> list[Any]:
        """One response per request, in order (docq_execute pads them into one call)."""
        # Ids are checked against the vocabulary before the run: on CUDA an out-of-range
        # embedding index is a device-side assert that poisons the context for good.
        return execute(
            requests,
            self._run,
            "torch",
            vocab_size=self.vocab_size,
            invalid=(IndexError,),
        )

    @torch.inference_mode()
    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> torch.Tensor:
        rows, longest = input_ids.shape
        if self.graphs is not None and self.graphs.fits(rows, longest):
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
        self.graphs = None
        del self.model
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
