"""The served runtime's in-process references, in the serve bench's own run and shapes.

- `old_runtime`: PyTorch FP32 eager, one synchronous call per request as the old FastAPI
  service ran it.
- `hf_fp16_eager`: what one would run without docq on the same GPU, the checkpoint in
  Hugging Face transformers, FP16, eager, timed one synchronous call at a time at the serve
  bench's shapes and at the batch the server forms from 18 requests of (7, 512) (126 rows),
  so the served (7, 512) rate is set against the reference's best batch, not only its
  request size.

Both run before the server starts and give the GPU's memory back when done. (A third,
`torch.compile(mode="max-autotune")` with CUDA graphs, left on 2026-12-06: on the H100 it
compiled past its 180 s deadline at every shape; docs/performance.md.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bench.gpu.clients import SHAPES, time_calls, windows

REFERENCE_SHAPES = [(1, 512), (2, 512), (7, 512), (126, 512)]


def _release(model: Any, device: str) -> None:
    """The model's GPU memory back: the server loads next."""
    import torch

    model.to("cpu")
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def hf_fp16_eager(checkpoint: Path, device: str, repeat: int) -> dict[str, Any]:
    """transformers FP16 eager, SDPA (FP32 on a CPU rehearsal): per shape of
    REFERENCE_SHAPES, p50 ms, seq/s and the samples, its inputs already on the device."""
    import torch
    from transformers import AutoModelForSequenceClassification

    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    model = AutoModelForSequenceClassification.from_pretrained(
        str(checkpoint), dtype=dtype, attn_implementation="sdpa"
    )
    model = model.to(device).eval()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    out: dict[str, Any] = {"dtype": str(dtype), "shapes": {}}
    with torch.inference_mode():
        for rows, length in REFERENCE_SHAPES:
            ids, mask = windows(rows, length, rows * 7 + length)
            on_device = torch.from_numpy(ids).to(device), torch.from_numpy(mask).to(device)

            def call(ids: Any = on_device[0], mask: Any = on_device[1]) -> Any:
                return model(input_ids=ids, attention_mask=mask).logits.float().cpu()

            got = time_calls(call, sync, repeat)
            got["seq_s"] = round(rows / got["p50_ms"] * 1000, 1)
            out["shapes"][f"{rows}x{length}"] = got
    _release(model, device)
    return out


def old_runtime(checkpoint: Path, device: str, repeat: int, warm_s: float = 1.0) -> dict[str, Any]:
    """PyTorch FP32 eager in-process, one synchronous call per request: ms and seq/s per
    full shape.

    Each shape is called for `warm_s` seconds (at least 3 calls) before it is timed: with 3
    calls only, the H200's (2, 512) samples of 2026-12-04 ran 24-27 ms for 12 calls, then
    19.4 ms: the baseline was timed a fifth slower than it runs."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = (
        AutoModelForSequenceClassification.from_pretrained(str(checkpoint), dtype=torch.float32)
        .to(device)
        .eval()
    )

    def logits(ids: np.ndarray, mask: np.ndarray) -> Any:
        return model(
            input_ids=torch.from_numpy(ids).to(device),
            attention_mask=torch.from_numpy(mask).to(device),
        ).logits.cpu()  # to the host: the call is synchronous

    out: dict[str, Any] = {}
    with torch.inference_mode():
        for rows, length, _ in (x for x in SHAPES if x[2] == 1.0):
            ids, mask = windows(rows, length, rows * 7 + length)
            call = lambda ids=ids, mask=mask: logits(ids, mask)  # noqa: E731
            got = time_calls(call, lambda: None, repeat, warm_s=warm_s)
            out[f"{rows}x{length}"] = {
                "p50_ms": got["p50_ms"],
                "seq_s": round(rows / got["p50_ms"] * 1000, 1),
                "samples_ms": got["samples_ms"],
            }
    _release(model, device)
    return out
