"""Where the torch-gpu runtime's time goes, in-process on the GPU: one lever at a time.

On the RoBERTa-large-shaped model of bench/gpu/model.py (FP16, random weights), measured
with CUDA events (median of --repeat after a warm-up):

- attention mask or none (SDPA's flash kernel needs none), eager and as CUDA graphs;
- SDPA backends put first (flash, cudnn, efficient) with and without a mask;
- graphs captured with an all-ones mask and without one, and their kernels (profiler);
- bucket padding: a 9- or 15-row batch replayed in the 16-row graph against its own shape;
- host side: execute()'s padding copy and pageable against pinned host-to-device copies;
- the runtime's own graph call (pinned staging, one synchronisation) end to end;
- eager at (16..64, 512): where graphs stop paying;
- torch.profiler at (64, 512): GPU time by kernel family (GEMM, attention, the rest);
- with --compile (alone), torch.compile (inductor, default mode) at (64, 512).

    python3 -m bench.gpu.profile --out $OUT/profile.json
    timeout 120 python3 -m bench.gpu.profile --compile --out $OUT/compile.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.gpu.model import roberta_config
from bench.gpu.shapes import windows
from serving import pb_stub

RUNTIME = Path(__file__).resolve().parents[2] / "serving" / "runtimes" / "torch_gpu.py"


def cuda_ms(fn: Callable[[], Any], repeat: int, warmup: int = 3) -> float:
    """Median GPU milliseconds of `fn` (events around each call)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return round(statistics.median(times), 3)


def wall_ms(fn: Callable[[], Any], repeat: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 4)


def family(name: str) -> str:
    n = name.lower()
    # Attention first: FA2's kernel names carry CUTLASS types (a 2026-12-03 profile counted
    # its 7.6 ms as GEMM time).
    if any(k in n for k in ("flash", "fmha", "attention", "softmax", "cudnn", "sdpa")):
        return "attention"
    if any(k in n for k in ("gemm", "cutlass", "sm90_xmma", "cublas", "nvjet", "matmul")):
        return "gemm"
    if "layer_norm" in n or "layernorm" in n:
        return "layernorm"
    if "gelu" in n:
        return "gelu"
    if "copy" in n or "memcpy" in n or "cat" in n:
        return "copy"
    return "other elementwise"


def kernel_profile(fn: Callable[[], Any], calls: int = 5) -> dict[str, Any]:
    """GPU milliseconds per call by kernel family, and the top kernels."""
    try:
        return _kernel_profile(fn, calls)
    except Exception as exc:  # a profile that cannot be taken is reported, not fatal
        return {"error": repr(exc)[:300]}


def _kernel_profile(fn: Callable[[], Any], calls: int) -> dict[str, Any]:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    by_family: dict[str, float] = defaultdict(float)
    kernels = []
    for e in prof.key_averages():
        us = getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0)
        if not us or e.key.startswith("ProfilerStep"):
            continue
        by_family[family(e.key)] += us / 1000 / calls
        kernels.append((us / 1000 / calls, e.count // calls, e.key[:90]))
    kernels.sort(reverse=True)
    return {
        "ms_per_call_by_family": {k: round(v, 3) for k, v in sorted(by_family.items())},
        "ms_per_call_total": round(sum(by_family.values()), 3),
        "top_kernels": [{"ms": round(a, 3), "per_call": b, "name": c} for a, b, c in kernels[:12]],
        **timeline(prof.events(), calls),
    }


def timeline(events: Any, calls: int) -> dict[str, float]:
    """Per call of back-to-back calls: how long the GPU was busy (kernels and copies, their
    union) and how long it sat idle between the first and the last of them: the host time
    the GPU waited for (inputs, launches, the copy back)."""
    spans = sorted(
        (e.time_range.start, e.time_range.end)
        for e in events
        if str(getattr(e, "device_type", "")).endswith("CUDA") and e.time_range.end > 0
    )
    if not spans:
        return {}
    busy, (start, end) = 0.0, spans[0]
    for a, b in spans[1:]:
        if a > end:
            busy, start = busy + end - start, a
        end = max(end, b)
    busy += end - start
    whole = spans[-1][1] - spans[0][0]
    return {
        "gpu_busy_ms_per_call": round(busy / 1000 / calls, 3),
        "gpu_idle_ms_per_call": round((whole - busy) / 1000 / calls, 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--compile", action="store_true", help="also torch.compile at (64, 512)")
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    from transformers import AutoModelForSequenceClassification

    runtime = pb_stub.load_runtime(RUNTIME)
    attention = runtime.attention  # the runtime's own backend switch
    dev = "cuda:0"
    torch.manual_seed(0)
    with torch.device(dev):
        model = AutoModelForSequenceClassification.from_config(
            roberta_config(args.tiny), dtype=torch.float16
        ).eval()
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }

    def inputs(rows: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        ids, mask = windows(rows, length, rows + length)
        return torch.from_numpy(ids).to(dev), torch.from_numpy(mask).to(dev)

    def forward(ids: torch.Tensor, mask: torch.Tensor | None, backend: str = "") -> Any:
        with torch.inference_mode(), attention(backend):
            return model(input_ids=ids, attention_mask=mask).logits

    if args.compile:  # its own call: the build may not finish inside the call's limit
        compile_only(model, args)
        return

    # 1. mask or none, eager, and SDPA backends
    eager: dict[str, Any] = {}
    for rows, length in ((1, 512), (8, 512), (16, 512), (32, 512), (64, 512)):
        ids, mask = inputs(rows, length)
        row: dict[str, Any] = {}
        for backend in ("", "flash", "cudnn", "efficient"):
            for label, m in (("mask", mask), ("none", None)):
                if backend == "flash" and m is not None:
                    continue  # flash takes no mask
                try:
                    ms = cuda_ms(lambda i=ids, m=m, b=backend: forward(i, m, b), args.repeat)
                    row[f"{backend or 'default'}/{label}"] = {
                        "ms": ms,
                        "seq_s": round(rows / ms * 1000, 1),
                    }
                except RuntimeError as exc:
                    row[f"{backend or 'default'}/{label}"] = {"error": str(exc)[:200]}
        eager[f"{rows}x{length}"] = row
        print(f"eager {rows}x{length}: {row}", flush=True)
    result["eager"] = eager

    # 2. the runtime's graphs (one length bucket, batch buckets 1..64 by 8): replays with a
    # mask and without, bucket padding, and the runtime's whole call.
    graphs = runtime.CudaGraphs(model, dev, 16, 512, 512, 8)  # the runtime's: up to 16 rows
    t = time.perf_counter()
    graphs.capture_all()
    result["capture"] = {
        "graphs": len(graphs.graphs),
        "s": round(time.perf_counter() - t, 1),
        "batch_buckets": graphs.batches,
    }

    def captured(rows: int, masked: bool) -> Any:
        """A graph of the model at (rows, 512), with an all-ones mask or none."""
        ids = torch.zeros((rows, 512), dtype=torch.int64, device=dev)
        mask = torch.ones_like(ids) if masked else None
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            forward(ids, mask)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.inference_mode(), torch.cuda.graph(graph):
            model(input_ids=ids, attention_mask=mask)
        return graph

    replay: dict[str, Any] = {}
    kept: dict[str, Any] = {}
    for rows in (1, 8, 64):
        for masked in (True, False):
            key = f"{rows}x512/{'mask' if masked else 'none'}"
            kept[key] = captured(rows, masked)
            ms = cuda_ms(kept[key].replay, args.repeat)
            replay[key] = {"ms": ms, "seq_s": round(rows / ms * 1000, 1)}
    result["graph_replay"] = replay
    print(f"graph replay: {replay}", flush=True)
    result["profile_graph_8x512"] = {
        k: kernel_profile(kept[f"8x512/{k}"].replay) for k in ("mask", "none")
    }
    print(json.dumps(result["profile_graph_8x512"], indent=1), flush=True)
    del kept
    padding: dict[str, Any] = {}
    for rows in (9, 15):
        ids, _ = inputs(rows, 512)
        padding[f"{rows} rows"] = {
            "own_shape_eager_ms": cuda_ms(lambda ids=ids: forward(ids, None), args.repeat),
            "bucket_16_graph_ms": cuda_ms(graphs.graphs[(16, 512)][0].replay, args.repeat),
        }
    result["bucket_padding"] = padding
    call: dict[str, Any] = {}
    for rows in (1, 8, 16):
        ids, mask = windows(rows, 512, 3)
        call[f"{rows}x512"] = {
            "runtime_call_wall_ms": wall_ms(lambda i=ids, m=mask: graphs(i, m), 50)
        }
    result["runtime_call"] = call
    print(f"runtime call: {call}", flush=True)

    # 3. host side: execute()'s padding copy, pageable and pinned transfers
    parts = [windows(7, 512, i) for i in range(9)]
    pad = pb_stub.load_runtime(RUNTIME.with_name("execute.py")).pad  # the shared loop's
    host: dict[str, Any] = {"pad_9x7x512_ms": wall_ms(lambda: pad(parts), 50)}
    big = np.ones((64, 512), dtype=np.int64)
    pinned = torch.from_numpy(big).pin_memory()
    gpu = torch.empty((64, 512), dtype=torch.int64, device=dev)
    host["h2d_64x512_pageable_ms"] = wall_ms(
        lambda: (gpu.copy_(torch.from_numpy(big)), torch.cuda.synchronize()), 50
    )
    host["h2d_64x512_pinned_ms"] = wall_ms(
        lambda: (gpu.copy_(pinned, non_blocking=True), torch.cuda.synchronize()), 50
    )
    result["host"] = host
    print(f"host: {host}", flush=True)

    # 4. where the GPU time goes at (64, 512)
    ids, mask = inputs(64, 512)
    result["profile_64x512"] = {
        "none": kernel_profile(lambda: forward(ids, None)),
        "mask": kernel_profile(lambda: forward(ids, mask)),
    }
    print(json.dumps(result["profile_64x512"], indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


def compile_only(model: Any, args: argparse.Namespace) -> None:
    """torch.compile (inductor, default mode, static shapes) at (64, 512) without a mask,
    against eager; written as soon as each number is known."""
    ids = torch.from_numpy(windows(64, 512, 1)[0]).to("cuda:0")
    result: dict[str, Any] = {"device": torch.cuda.get_device_name(0)}

    def eager() -> Any:
        with torch.inference_mode():
            return model(input_ids=ids).logits

    result["eager_ms"] = cuda_ms(eager, args.repeat)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    t = time.perf_counter()
    compiled = torch.compile(model, dynamic=False)

    def run() -> Any:
        with torch.inference_mode():
            return compiled(input_ids=ids).logits

    run()
    torch.cuda.synchronize()
    result["build_s"] = round(time.perf_counter() - t, 1)
    result["compiled_ms"] = cuda_ms(run, args.repeat)
    result["compiled_seq_s"] = round(64 / result["compiled_ms"] * 1000, 1)
    result["eager_seq_s"] = round(64 / result["eager_ms"] * 1000, 1)
    print(f"compile: {result}", flush=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
