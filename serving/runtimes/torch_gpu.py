"""Triton Python-backend model for the `torch-gpu` runtime: PyTorch FP16 on a GPU.

Installed by `docq convert --runtime torch-gpu` as `model_repository/<name>/<version>/model.py`
(one import of this module, from this package copied beside it as `docq_runtime/`: see
serving/runtimes/__init__.py), beside the Hugging Face checkpoint (`config.json`,
`model.safetensors`) it loads. It is what this project can build and measure on a GPU host
without TensorRT.

An instance of kind GPU runs on its device in the precision of the `dtype` parameter
(float16 by default). Two engines: `flat` (flat/, the default for BERT-family checkpoints:
real tokens only) and `hf` (any other checkpoint, padded, through transformers). Small
batches replay CUDA graphs (graphs.py, parameter `cuda_graphs`, on by default).

Eager calls pass no mask when every row is full (flash attention). Graph inputs are staged
in pinned host buffers and copied in one transfer per input. `sdpa_backend` (flash, cudnn,
efficient, math; empty: PyTorch's choice) puts one attention kernel first.
Logits go back as a CPU torch tensor, through DLPack (execute.py).

With `overlap` (on by default for GPU instances), execute() of an eager batch returns once
the batch is queued on the GPU and its logits' copy back enqueued, and a responder thread
(execute.Responder) waits for that copy and answers; the next execute()'s host work (reading
the requests, the flat layout, staging, the launches) then runs while this batch's kernels
do, instead of leaving the GPU idle for it (docs/gpu-engine.md: 1.3-2.3 ms a large call on
the H200). A small batch (a graph replay) is answered in execute() itself: one request at
a time has no next batch to overlap, and the responder's hop cost (1, 512) 0.45 ms on the
H200. Everything a batch reads lives in buffers a later batch cannot overwrite first: its
inputs in one of two pinned host slots (a slot is reused only after its copy ran), the
device buffers and graph outputs in stream order, its logits in host memory of their own.

An instance of kind CPU runs float32 eagerly on the CPU, so that the same file can be
served, and tested, by the CPU-only tritonserver.
The package is self-contained: it runs inside the stub, not inside docq.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from transformers import AutoModelForSequenceClassification

from . import flat, graphs
from .execute import Responder, execute, parameter
from .staging import Staging

DTYPES: dict[str, torch.dtype | str] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "fp8": flat.products.FP8,  # the flat engine's FP8 products (flat/products.py)
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


def full(attention_mask: np.ndarray) -> bool:
    """Whether every position of the batch is a real token (no mask is needed)."""
    return bool(attention_mask.all())


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
        self.graphs: graphs.CudaGraphs | graphs.TokenGraphs | None = None
        self.flat: Any = None
        overlap = parameter(config, "overlap", "true" if self.device != "cpu" else "false")
        self.responder = Responder() if overlap == "true" else None
        engine = parameter(config, "engine", "flat")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
        if engine == "flat" and flat.checkpoint.unsupported(SimpleNamespace(**checkpoint)) is None:
            model = load(folder, "cpu", torch.float32)
            self.flat = flat.encoder.FlatEncoder(
                model,
                self.device,
                self.dtype,
                parameter(config, "gelu", "erf"),
                flat.products.fp8_products(parameter(config, "fp8_products", "all")),
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
            capture = self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true"
            if capture and self.flat.varlen:
                few = min(max_batch, int(parameter(config, "graph_max_batch", "8")))
                self.graphs = graphs.TokenGraphs(
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
        if self.dtype == flat.products.FP8:
            raise ValueError("dtype fp8 needs the flat engine (a BERT-family checkpoint)")
        self.model = load(folder, self.device, self.dtype)
        if self.device != "cpu" and parameter(config, "cuda_graphs", "true") == "true":
            self.graphs = graphs.CudaGraphs(
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
        """One response per request, in order (execute.py joins them into one call); with
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
        if isinstance(self.graphs, graphs.TokenGraphs) and self.graphs.fits(batch):
            pos = flat.checkpoint.positions(self.flat_config, batch.ids, batch.cu)
            return self._back(self.graphs(batch, pos), later=False)
        ids, cu, order, dense = batch.ids, batch.cu, None, 0
        if self.flat.attention == "cudnn":  # full windows first: one cuDNN block
            ids, cu, order, dense = flat.attention.full_first(batch.ids, batch.cu, self.max_len)
        pos = flat.checkpoint.positions(self.flat_config, ids, cu)
        tokens = -(-int(cu[-1]) // flat.products.TOKEN_ALIGN) * flat.products.TOKEN_ALIGN
        ids_d, pos_d, cu_d, order_d = self.staging.stage(ids, pos, cu, tokens, batch.windows, order)
        logits = self.flat.forward(
            ids_d, pos_d, cu_d.to(torch.int32), order_d, batch.longest, cu, dense=dense
        )
        return self._back(logits, later=True)

    @torch.inference_mode()
    def _run(self, input_ids: np.ndarray, attention_mask: np.ndarray) -> torch.Tensor:
        rows, longest = input_ids.shape
        if isinstance(self.graphs, graphs.CudaGraphs) and self.graphs.fits(rows, longest):
            return self.graphs(input_ids, attention_mask)
        ids = torch.from_numpy(input_ids).to(self.device, non_blocking=True)
        mask = None  # no mask when every row is full: flash attention
        if not full(attention_mask):
            mask = torch.from_numpy(attention_mask).to(self.device, non_blocking=True)
        with graphs.attention(self.backend):
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
