"""The served runtime's in-process references, in the serve bench's own run and shapes: the
checkpoint in transformers (SDPA attention), one synchronous call at a time.

- `old_runtime`: FP32, its inputs sent to the device inside each call, as the old FastAPI
  service ran it, at each full shape of SHAPES.
- `hf_fp16_eager`: what one would run without docq on the same GPU: FP16 (FP32 on a CPU
  rehearsal), its inputs on the device first, at the serve bench's shapes and at the batch
  the server forms from 18 requests of (7, 512) (126 rows), so the served (7, 512) rate is
  set against the reference's best batch, not only its request size.

Both run before the server starts and give the GPU's memory back when done.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.gpu.clients import SHAPES, time_calls, windows

REFERENCE_SHAPES = [(1, 512), (2, 512), (7, 512), (126, 512)]


def timed_shapes(
    checkpoint: Path,
    device: str,
    dtype: Any,
    shapes: list[tuple[int, int]],
    repeat: int,
    on_device: bool,
    warm_s: float = 0,
) -> dict[str, Any]:
    """p50, p95, samples (ms) and seq/s of the checkpoint in `dtype` at each (rows, length)
    of `shapes`, one synchronous call at a time (after 3 calls and `warm_s` seconds untimed),
    the logits back on the host; with `on_device` the inputs are on `device` before the
    clock starts, else each call sends them there. Then the model's GPU memory goes back:
    the server loads next."""
    import torch
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(
        str(checkpoint), dtype=dtype, attn_implementation="sdpa"
    )
    model = model.to(device).eval()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    out: dict[str, Any] = {}
    with torch.inference_mode():
        for rows, length in shapes:
            ids, mask = (torch.from_numpy(a) for a in windows(rows, length, rows * 7 + length))
            if on_device:
                ids, mask = ids.to(device), mask.to(device)

            def call(ids: Any = ids, mask: Any = mask) -> Any:
                logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
                return logits.float().cpu()

            got = time_calls(call, sync, repeat, warm_s=warm_s)
            out[f"{rows}x{length}"] = got | {"seq_s": round(rows / got["p50_ms"] * 1000, 1)}
    model.to("cpu")
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out


def hf_fp16_eager(checkpoint: Path, device: str, repeat: int) -> dict[str, Any]:
    import torch

    dtype = torch.float16 if device.startswith("cuda") else torch.float32
    shapes = timed_shapes(checkpoint, device, dtype, REFERENCE_SHAPES, repeat, on_device=True)
    return {"dtype": str(dtype), "shapes": shapes}


def old_runtime(checkpoint: Path, device: str, repeat: int, warm_s: float = 1.0) -> dict[str, Any]:
    """Each shape is called for `warm_s` seconds (at least 3 calls) before it is timed: with 3
    calls only, the H200's (2, 512) samples of 2026-12-04 ran 24-27 ms for 12 calls, then
    19.4 ms: the baseline was timed a fifth slower than it runs."""
    import torch

    full = [(rows, length) for rows, length, last in SHAPES if last == 1.0]
    return timed_shapes(checkpoint, device, torch.float32, full, repeat, False, warm_s)
