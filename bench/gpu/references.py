"""The served runtime's in-process references, in the serve bench's own run and shapes.

The old runtime (`old_runtime`): PyTorch FP32 eager in-process, one synchronous call per
request as the old FastAPI service ran it, and the FP32 reference logits the served
variants' parity is checked against.

A skeptic compares docq's served runtime with what one would run without docq, on the same
GPU: the checkpoint in Hugging Face transformers, FP16, eager (`hf-fp16-eager`), and the
same model through `torch.compile(mode="max-autotune")`, whose Inductor kernels are
autotuned per shape and replayed as CUDA graphs (`compile-max-autotune`). Each is timed
one synchronous call at a time at the serve bench's shapes and at the batch the server
forms from 18 requests of (7, 512) (126 rows), so the served (7, 512) rate is set against
the reference's best batch, not only its request size.

Both run in a child process with a deadline (`timeout_s`), before the server starts: a
compile that runs too long or fails is recorded with its reason and the run goes on, and
the child's GPU memory is gone before Triton loads. The child writes its JSON after each
step, so what a killed child measured is kept. max-autotune's compile time is reported per
shape (Inductor compiles each static shape anew).
"""

from __future__ import annotations

import json
import multiprocessing
import statistics
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from bench.gpu.shapes import SHAPES, parity_batches, windows

REFERENCE_SHAPES = [(1, 512), (2, 512), (7, 512), (126, 512)]


def _time_calls(call: Any, sync: Any, repeat: int, warm: int = 3, warm_s: float = 0) -> dict:
    """p50 and samples (ms) of `repeat` calls, after `warm` calls and `warm_s` seconds."""
    start, calls = time.perf_counter(), 0
    while calls < warm or time.perf_counter() - start < warm_s:
        call()
        calls += 1
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        sync()
        times.append((time.perf_counter() - t) * 1000)
    return {
        "p50_ms": round(statistics.median(times), 3),
        "samples_ms": [round(x, 3) for x in times],
    }


def _child(checkpoint: str, device: str, repeat: int, out: str, shapes: list) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification

    result: dict[str, Any] = {"device": device}

    def save() -> None:
        Path(out).write_text(json.dumps(result, indent=1))

    dtype = torch.float16 if device.startswith("cuda") else torch.float32  # CPU: rehearsal
    model = AutoModelForSequenceClassification.from_pretrained(
        checkpoint, dtype=dtype, attn_implementation="sdpa"
    )
    model = model.to(device).eval()
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    inputs = {}
    for rows, length in shapes:
        ids, mask = windows(rows, length, rows * 7 + length)
        inputs[(rows, length)] = (
            torch.from_numpy(ids).to(device),
            torch.from_numpy(mask).to(device),
        )
    eager_logits = {}
    result["hf-fp16-eager"] = {"dtype": str(dtype), "shapes": {}}
    with torch.inference_mode():
        for shape, (ids, mask) in inputs.items():

            def call(ids: Any = ids, mask: Any = mask) -> Any:
                return model(input_ids=ids, attention_mask=mask).logits.float().cpu()

            got = _time_calls(call, sync, repeat)
            got["seq_s"] = round(shape[0] / got["p50_ms"] * 1000, 1)
            result["hf-fp16-eager"]["shapes"][f"{shape[0]}x{shape[1]}"] = got
            eager_logits[shape] = call()
            save()
    compiled_entry: dict[str, Any] = {"mode": "max-autotune", "shapes": {}}
    result["compile-max-autotune"] = compiled_entry
    save()
    compiled = torch.compile(model, mode="max-autotune", dynamic=False)
    with torch.inference_mode():  # the served batch's shape first: the deadline may cut
        for shape, (ids, mask) in sorted(inputs.items(), key=lambda kv: -kv[0][0]):

            def ccall(ids: Any = ids, mask: Any = mask) -> Any:
                torch.compiler.cudagraph_mark_step_begin()
                return compiled(input_ids=ids, attention_mask=mask).logits.float().cpu()

            t = time.perf_counter()
            first = ccall()
            sync()
            compile_s = round(time.perf_counter() - t, 1)
            got = _time_calls(ccall, sync, repeat)
            got["seq_s"] = round(shape[0] / got["p50_ms"] * 1000, 1)
            got["compile_s"] = compile_s
            got["max_abs_diff_vs_eager"] = float((first - eager_logits[shape]).abs().max())
            compiled_entry["shapes"][f"{shape[0]}x{shape[1]}"] = got
            save()
    compiled_entry["compile_s"] = round(
        sum(s["compile_s"] for s in compiled_entry["shapes"].values()), 1
    )
    save()


def _run_child(checkpoint: str, device: str, repeat: int, out: str, shapes: list) -> None:
    try:
        _child(checkpoint, device, repeat, out, shapes)
    except Exception:  # recorded, the serve bench goes on
        path = Path(out)
        result = json.loads(path.read_text()) if path.exists() else {}
        result["error"] = traceback.format_exc()[-2000:]
        path.write_text(json.dumps(result, indent=1))


def references(
    checkpoint: Path,
    device: str,
    repeat: int,
    timeout_s: float,
    work: Path,
    shapes: list | None = None,
) -> dict[str, Any]:
    """HF FP16 eager and torch.compile max-autotune in a child, within `timeout_s`: per
    shape p50 ms and seq/s, the compile's seconds; what did not run says why."""
    out = work / "references.json"
    ctx = multiprocessing.get_context("spawn")
    args = (str(checkpoint), device, repeat, str(out), shapes or REFERENCE_SHAPES)
    child = ctx.Process(target=_run_child, args=args, daemon=True)
    t = time.perf_counter()
    child.start()
    child.join(timeout_s)
    timed_out = child.is_alive()
    if timed_out:
        child.kill()
        child.join(10)
    result = json.loads(out.read_text()) if out.exists() else {}
    result["elapsed_s"] = round(time.perf_counter() - t, 1)
    error = result.pop("error", None)
    for name in ("hf-fp16-eager", "compile-max-autotune"):
        entry = result.setdefault(name, {"shapes": {}})
        done = set(entry.get("shapes", {}))
        todo = [f"{r}x{n}" for r, n in shapes or REFERENCE_SHAPES if f"{r}x{n}" not in done]
        if todo:
            why = (
                f"the references' deadline of {timeout_s:.0f} s passed"
                if timed_out
                else f"failed: {error.strip().splitlines()[-1]}"
                if error
                else "not run"
            )
            entry["skipped"] = {"shapes": todo, "why": why}
    if error:
        result["error"] = error
    return result


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
            got = _time_calls(call, lambda: None, repeat, warm_s=warm_s)
            out[f"{rows}x{length}"] = {
                "p50_ms": got["p50_ms"],
                "seq_s": round(rows / got["p50_ms"] * 1000, 1),
                "samples_ms": got["samples_ms"],
            }
    torch.backends.cuda.matmul.allow_tf32 = False  # the FP32 reference of the parity check
    with torch.inference_mode():
        reference = [logits(ids, mask).float().numpy().tolist() for ids, mask in parity_batches()]
    out["parity_reference"] = reference
    model.to("cpu")  # the GPU's memory is the server's next
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return out
