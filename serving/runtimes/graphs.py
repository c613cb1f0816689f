"""The torch-gpu runtime's CUDA graphs: per (batch, length) bucket for the padded engine
(`CudaGraphs`), per token bucket and window capacity for the flat one (`TokenGraphs`).

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
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

import numpy as np
import torch

from .staging import Staging


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
