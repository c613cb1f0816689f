"""The serve bench's other side: the old runtime, PyTorch FP32 eager in-process, one
synchronous call per request as the old FastAPI service ran it; and the FP32 reference
logits the served variants' parity is checked against."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.gpu.shapes import SHAPES, parity_batches, windows


def old_runtime(checkpoint: Path, device: str, repeat: int, warm_s: float = 1.0) -> dict[str, Any]:
    """PyTorch FP32 eager in-process, one synchronous call per request: ms and seq/s per
    full shape, and under "parity_reference" the logits of parity_batches() (TF32 off).

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
    out: dict[str, Any] = {}
    with torch.inference_mode():
        for rows, length, _ in (x for x in SHAPES if x[2] == 1.0):
            ids, mask = windows(rows, length, rows * 7 + length)

            def call(ids: np.ndarray = ids, mask: np.ndarray = mask) -> None:
                logits = model(
                    input_ids=torch.from_numpy(ids).to(device),
                    attention_mask=torch.from_numpy(mask).to(device),
                ).logits
                logits.cpu()

            start, calls = time.perf_counter(), 0
            while calls < 3 or time.perf_counter() - start < warm_s:
                call()
                calls += 1
            times = []
            for _ in range(repeat):
                t = time.perf_counter()
                call()
                times.append((time.perf_counter() - t) * 1000)
            p50 = statistics.median(times)
            out[f"{rows}x{length}"] = {
                "p50_ms": round(p50, 3),
                "seq_s": round(rows / p50 * 1000, 1),
                "samples_ms": [round(t, 3) for t in times],
            }
    torch.backends.cuda.matmul.allow_tf32 = False  # the FP32 reference of the parity check
    with torch.inference_mode():
        out["parity_reference"] = [
            model(
                input_ids=torch.from_numpy(ids).to(device),
                attention_mask=torch.from_numpy(mask).to(device),
            )
            .logits.float()
            .cpu()
            .numpy()
            .tolist()
            for ids, mask in parity_batches()
        ]
    model.to("cpu")  # the GPU's memory is the server's next
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out
