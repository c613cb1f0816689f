"""Triton Python-backend model for the `torch-gpu` runtime: PyTorch FP16 on a GPU.

Copied to `model_repository/<name>/<version>/model.py` by `docq convert --runtime torch-gpu`,
beside the Hugging Face checkpoint (`config.json`, `model.safetensors`) it loads. It is what
this project can build and measure on a GPU host without TensorRT.

An instance of kind GPU runs on its device in the precision of the `dtype` parameter
(float16 by default), replaying CUDA graphs (parameter `cuda_graphs`, on by default): one
graph per batch bucket (powers of two up to max_batch_size) and length bucket (multiples of
`graph_seq_step` up to max_seq_len), all captured at load, so that a request costs one graph
launch instead of hundreds of kernel launches; a batch is padded up to its bucket (padding
rows and columns are masked and dropped). An instance of kind CPU runs float32 eagerly on
the CPU, so that the same file can be served, and tested, by the CPU-only tritonserver.
Inputs are read through DLPack, which is right with numpy 1 and 2 (the stub's `as_numpy()`
is not under numpy 2).
The model is written self-contained: it runs inside the stub, not inside docq.
"""

from __future__ import annotations

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
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
    return model.to(device=device, dtype=dtype).eval()


def buckets(limit: int, step: int | None = None) -> list[int]:
    """Sizes graphs are captured for: multiples of `step` (powers of two without one) up to
    `limit`, and `limit` itself."""
    if step:
        sizes = list(range(step, limit, step))
    else:
        sizes = [1 << i for i in range(limit.bit_length()) if 1 << i < limit]
    return [*sizes, limit]


class CudaGraphs:
    """The model captured as one CUDA graph per (batch, length) bucket, replayed per call.

    Every graph reads its own static input tensors and shares one memory pool for its
    activations. Sharing is safe here because one instance runs one call at a time and each
    call copies its logits out before the next replay can overwrite the pool.
    """

    def __init__(
        self, model: torch.nn.Module, device: str, max_batch: int, max_len: int, step: int
    ) -> None:
        self.model, self.device = model, device
        self.batches, self.lengths = buckets(max_batch), buckets(max_len, step)
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[tuple[int, int], tuple[Any, torch.Tensor, torch.Tensor, Any]] = {}

    @torch.inference_mode()
    def capture_all(self) -> None:
        # Largest first: the shared pool is sized by the first (biggest) capture.
        for rows in reversed(self.batches):
            for length in reversed(self.lengths):
                self._capture(rows, length)

    def _capture(self, rows: int, length: int) -> None:
        ids = torch.zeros((rows, length), dtype=torch.int64, device=self.device)
        mask = torch.ones((rows, length), dtype=torch.int64, device=self.device)
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
            for _ in range(2):
                self.model(input_ids=ids, attention_mask=mask)
        torch.cuda.current_stream(self.device).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.pool):
            logits = self.model(input_ids=ids, attention_mask=mask).logits
        self.graphs[(rows, length)] = (graph, ids, mask, logits)

    def fits(self, rows: int, length: int) -> bool:
        return rows <= self.batches[-1] and length <= self.lengths[-1]

    @torch.inference_mode()
    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        rows, length = input_ids.shape
        bucket = (
            next(b for b in self.batches if b >= rows),
            next(n for n in self.lengths if n >= length),
        )
        graph, ids, mask, logits = self.graphs[bucket]
        ids.zero_()
        mask.zero_()
        ids[:rows, :length].copy_(torch.from_numpy(input_ids), non_blocking=True)
        mask[:rows, :length].copy_(torch.from_numpy(attention_mask), non_blocking=True)
        graph.replay()
        return logits[:rows].float().cpu().numpy()


class TritonPythonModel:
    """Runs a Hugging Face sequence classifier; pads each execute()'s requests into one call."""

    def initialize(self, args: dict[str, str]) -> None:
        config = json.loads(args["model_config"])
        self.device, self.dtype = device_and_dtype(args, config)
        if self.device == "cpu":
            torch.set_num_threads(int(parameter(config, "intra_op_threads", "1")))
        folder = Path(args["model_repository"]) / args["model_version"]
        self.model = load(folder, self.device, self.dtype)
        self.graphs: CudaGraphs | None = None
        if self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true":
            self.graphs = CudaGraphs(
                self.model,
                self.device,
                int(config.get("max_batch_size", 0)) or 1,
                int(parameter(config, "max_seq_len", "512")),
                int(parameter(config, "graph_seq_step", "64")),
            )
            self.graphs.capture_all()

    def execute(self, requests: list[Any]) -> list[Any]:
        """One response per request, in order (docq_execute pads them into one call)."""
        return execute(requests, self._run, "torch")

    @torch.inference_mode()
    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
        rows, longest = input_ids.shape
        if self.graphs is not None and self.graphs.fits(rows, longest):
            return self.graphs(input_ids, attention_mask)
        logits = self.model(
            input_ids=torch.from_numpy(input_ids).to(self.device, non_blocking=True),
            attention_mask=torch.from_numpy(attention_mask).to(self.device, non_blocking=True),
        ).logits
        # FP16 logits are returned as FP32, the type config.pbtxt declares.
        return logits.float().cpu().numpy()

    def finalize(self) -> None:
        self.graphs = None
        del self.model
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
