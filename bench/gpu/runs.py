"""The GPU bench's runs on docq's side: the bulk job with small jobs meanwhile, and the long
upload."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from bench.docq_jobs import SmallJobs, run_docq, small_job_stats, submit, wait_job
from bench.gpu.measure import GpuSampler, stats_delta, tiers, triton_stats
from bench.gpu.model import MODEL
from bench.procs import worker_batches
from bench.stack import Stack
from corpus.doc_type import LabelledDocument

SMALL_EVERY_S = 0.5  # between two 3-document jobs during the bulk job


def started(stack: Stack) -> Callable[[], bool]:
    """True once the bulk workers sent a batch more than when this was made."""

    def sent() -> float:
        return sum(v for k, v in worker_batches(stack.bulk_ports).items() if "batches" in k)

    base = sent()
    return lambda: sent() > base


def run_bulk(
    stack: Stack,
    docs: Sequence[LabelledDocument],
    windows: int,
    sampler: GpuSampler,
    small: Sequence[LabelledDocument],
) -> dict[str, Any]:
    """bench.docq_jobs.run_docq on `docs` with GPU samples, windows/s, CPU per tier and
    3-document jobs of `small` meanwhile, from the workers' first batch (SmallJobs)."""
    probe = SmallJobs(stack, small, SMALL_EVERY_S, ready=started(stack))
    triton_before = triton_stats(stack.triton_url, MODEL)
    t0 = time.monotonic()
    out = run_docq(stack, docs)
    t1 = time.monotonic()
    out["triton"] = stats_delta(triton_before, triton_stats(stack.triton_url, MODEL))
    out["small_jobs"] = small_job_stats(probe.stop(), t0, t1)
    out["workers"] = stack.bulk_workers
    out["windows"] = windows
    out["windows_per_s"] = round(windows / out["elapsed_s"], 1)
    out["gpu"] = sampler.window(t0, t1)
    out["cpu_s"] = out["cpu_s"] | {"tiers": tiers(out["cpu_s"])}
    worker_s = out["cpu_s"]["tiers"].get("bulk workers", 0.0)
    out["worker_cpu_ms_per_doc"] = round(1000 * worker_s / len(docs), 2)
    out["worker_cores_busy"] = round(worker_s / out["elapsed_s"], 2)
    return out


def upload_long_docq(stack: Stack, docs: Sequence[LabelledDocument]) -> dict[str, Any]:
    """One client uploads `docs` in one request: the answer's latency, then the results."""
    with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120) as http:
        t = time.monotonic()
        job_id, accept_ms = submit(http, docs)
        job = wait_job(http, job_id, 0.1)
        done = time.monotonic() - t
    return {
        "documents": len(docs),
        "answer": f"202 after {accept_ms:.0f} ms",
        "accept_ms": round(accept_ms, 1),
        "status": job["status"],
        "results_after_s": round(done, 2),
        "failed": job["progress"]["documents_failed"],
    }
