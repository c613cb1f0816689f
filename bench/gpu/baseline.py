"""The old architecture on the GPU: bench.baseline.sweep's servers and clients swept over
worker counts, in FP32 (as it ran) and FP16 (`model.half()`, SDPA: the skeptic's first
try), the GPU memory each worker holds, and the long upload in one request."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from bench.baseline.sweep import CLIENTS_PER_WORKER, baseline_configs, sweep_point
from bench.gpu.measure import Budget, GpuSampler, gpu_processes
from bench.procs import tree
from bench.report import console
from corpus.doc_type import LabelledDocument

LONG_TIMEOUT_S = 60.0  # the long upload's client waits this long for the old service


def upload_long_baseline(url: str, docs: Sequence[LabelledDocument], timeout: float) -> dict:
    """The same upload to the old service's bulk call, with a client that waits `timeout`."""
    body = {"documents": [{"id": d.id, "text": d.text} for d in docs]}
    t = time.monotonic()
    try:
        resp = httpx.post(f"{url}/classify/batch", json=body, timeout=timeout)
        seen = f"HTTP {resp.status_code} after {time.monotonic() - t:.1f} s"
        classified = len(resp.json()) if resp.status_code == 200 else 0
    except httpx.TimeoutException:
        seen = f"timed out after {time.monotonic() - t:.1f} s (client timeout {timeout:.0f} s)"
        classified = 0
    except httpx.HTTPError as exc:
        seen = f"{type(exc).__name__} after {time.monotonic() - t:.1f} s"
        classified = 0
    return {
        "documents": len(docs),
        "answer": seen,
        "elapsed_s": round(time.monotonic() - t, 2),
        "classified": classified,
    }


def end_leftovers(pids: set[int], needle: str) -> None:
    """SIGKILL those of `pids` still alive whose command line holds `needle` (a pid reused
    since by another process is left alone)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if needle in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                os.kill(pid, signal.SIGKILL)


def sample(docs: Sequence[LabelledDocument], n: int) -> list[int]:
    """`n` indices spread evenly over `docs`: a sample with the corpus's mix of lengths (the
    first n documents are not: the first 400 held 2.45 windows each against 2.34)."""
    n = min(n, len(docs))
    return [int(i * len(docs) / n) for i in range(n)]


def run_baseline_gpu(
    docs: Sequence[LabelledDocument],
    windows: int,
    long_docs: Sequence[LabelledDocument],
    args: argparse.Namespace,
    workdir: Path,
    sampler: GpuSampler,
    budget: Budget,
) -> dict[str, Any]:
    """The old architecture in FP16, then FP32, each swept over its worker counts on `docs`
    by bench.baseline.sweep's servers and clients, with the GPU memory each worker holds;
    the long upload in one request on FP32's last point."""
    out: dict[str, Any] = {"documents": len(docs), "windows": windows}
    for precision in ("fp16", "fp32"):
        workers = args.baseline_workers_fp16 if precision == "fp16" else args.baseline_workers
        os.environ["BASELINE_PRECISION"] = precision  # read by bench/baseline/app.py
        configs = baseline_configs(os.cpu_count() or 1, workers, CLIENTS_PER_WORKER)
        sweep: list[dict[str, Any]] = []
        for config in configs:
            long = long_docs if precision == "fp32" and config == configs[-1] else []
            need = 45 + (LONG_TIMEOUT_S + 5 if long else 0)  # start, run; long
            if not budget.allows(need, f"baseline {precision} with {config.workers} workers"):
                break
            console.print(f"  baseline {precision} {config}: {len(docs)} documents")
            with sweep_point(config, docs, workdir, warm=True) as (point, url, gunicorn):
                end = time.monotonic()  # drive's clock ran from the first request to the last
                point["precision"] = precision
                point["windows_per_s"] = round(windows / point["elapsed_s"], 1)
                point["gpu"] = sampler.window(end - point["elapsed_s"], end)
                # What each worker holds once it has served: its copy, its CUDA context and
                # what PyTorch's allocator keeps of the activations.
                pids = set(tree(gunicorn))
                held = sorted(mib for pid, mib in gpu_processes().items() if pid in pids)
                point["gpu_mib_per_worker"] = held
                sweep.append(point)
                console.print(f"    {point['docs_per_s']} docs/s, GPU MiB per worker {held}")
                if long:
                    got = upload_long_baseline(url, long, LONG_TIMEOUT_S)
                    out["long_upload"] = got | {"precision": precision}
                    console.print(f"    {len(long)} long documents in one request: {got}")
                    # The worker still inside the abandoned call would make the master's
                    # graceful stop wait for it: end the workers first.
                    end_leftovers(set(tree(gunicorn)) - {gunicorn}, "bench.baseline.app")
            # A worker still inside the abandoned bulk call outlives its master's stop and
            # would hold the GPU into the next phase: end what is left of this server.
            end_leftovers(pids, "bench.baseline.app")
        best = max(sweep, key=lambda p: p["docs_per_s"]) if sweep else {}
        out[precision] = {"sweep": sweep, "best": best}
    return out
