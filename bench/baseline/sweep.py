"""The old architecture's side of both pipeline benches: its server (bench/baseline/app.py,
started by devstack/) swept over worker counts, each point driven by synchronous clients,
one request per document, as its users drove it; on the CPU tuned to the cores, on a GPU in
FP16 and FP32 with the GPU memory each worker holds and the long upload in one request."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.gpu.measure import Budget, GpuSampler, gpu_processes
from bench.procs import CpuMeter, percentile, tree
from bench.report import console
from corpus.doc_type import LabelledDocument
from devstack import services

SWEEP_DOCUMENTS = 300  # documents per sweep point; the best then runs every document
CLIENTS_PER_WORKER = 4  # enough that every worker always has a request waiting
LONG_TIMEOUT_S = 60.0  # the long upload's client waits this long for the old service


@dataclasses.dataclass(frozen=True)
class BaselineConfig:
    """One point of the baseline's sweep: Gunicorn workers, torch threads each, clients."""

    workers: int
    threads: int
    clients: int


def baseline_configs(
    cores: int, workers: Sequence[int], clients_per_worker: int
) -> list[BaselineConfig]:
    """workers x threads = cores where it divides (at least one thread per worker), and
    enough clients that every worker always has a request waiting."""
    return [
        BaselineConfig(w, max(1, cores // w), w * clients_per_worker) for w in sorted(set(workers))
    ]


async def drive(
    url: str, docs: Sequence[LabelledDocument], clients: int, timeout: float
) -> dict[str, Any]:
    """Every document once, by `clients` concurrent synchronous clients."""
    queue: asyncio.Queue[LabelledDocument] = asyncio.Queue()
    for d in docs:
        queue.put_nowait(d)
    done, timeouts, errors, latencies = 0, 0, 0, []

    async def client() -> None:
        nonlocal done, timeouts, errors
        async with httpx.AsyncClient(base_url=url, timeout=timeout) as http:
            while not queue.empty():
                d = queue.get_nowait()
                t = time.monotonic()
                try:
                    resp = await http.post("/classify", json={"id": d.id, "text": d.text})
                    resp.raise_for_status()
                    done += 1
                    latencies.append(time.monotonic() - t)
                except httpx.TimeoutException:
                    timeouts += 1
                except httpx.HTTPError:
                    errors += 1

    start = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.monotonic() - start
    return {
        "documents": len(docs),
        "documents_done": done,
        "timeouts": timeouts,
        "errors": errors,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(done / elapsed, 3),
        "latency_p50_s": round(percentile(latencies, 50), 2),
        "latency_p95_s": round(percentile(latencies, 95), 2),
    }


@contextmanager
def baseline_server(config: BaselineConfig, workdir: Path) -> Iterator[tuple[str, int]]:
    """The old architecture's server with `config`'s workers and threads; yields its URL
    and the Gunicorn master's pid."""
    threads = str(config.threads)
    names = ("BASELINE_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    env = os.environ | {name: threads for name in names}
    log = workdir / f"baseline-{config.workers}w.log"
    with services.baseline_server(env, log, config.workers) as (url, proc):
        got = httpx.get(f"{url}/threads").json()["torch_threads"]
        if got != config.threads:
            raise RuntimeError(f"baseline worker runs {got} torch threads, not {config.threads}")
        yield url, proc.pid


@contextmanager
def sweep_point(
    config: BaselineConfig, docs: Sequence[LabelledDocument], workdir: Path, warm: bool = False
) -> Iterator[tuple[dict[str, Any], str, int]]:
    """One point of a sweep: every document of `docs` through the server of `config` (with
    `warm`, after one untimed request per client: a GPU worker's first ones load its CUDA
    kernels and cuBLAS handles) and the server's CPU seconds; yields the point, the URL and
    the Gunicorn master's pid while the server still runs."""
    with baseline_server(config, workdir) as (url, gunicorn):
        if warm:
            asyncio.run(drive(url, docs[: config.clients], config.clients, 60.0))
        meter = CpuMeter({"baseline (gunicorn + model copies)": gunicorn})
        meter.start()
        result = asyncio.run(drive(url, docs, config.clients, 60.0))
        result["cpu_s"] = meter.stop()
        pids = set(tree(gunicorn))
        yield dataclasses.asdict(config) | result, url, gunicorn
    # A worker still inside an abandoned call (the long upload's) outlives its master's stop
    # and would hold the GPU into the next phase: end what is left of this server.
    end_leftovers(pids)


def end_leftovers(pids: set[int]) -> None:
    """SIGKILL those of `pids` still alive that run the old architecture's app (a pid reused
    since by another process is left alone)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            if b"bench.baseline.app" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


def run_baseline(
    docs: Sequence[LabelledDocument], cores: int, workers: Sequence[int], workdir: Path
) -> dict[str, Any]:
    """The tuned old architecture on the CPU: the sweep over `workers` on the first
    SWEEP_DOCUMENTS documents, then its best configuration on every document."""

    def run(config: BaselineConfig, part: Sequence[LabelledDocument]) -> dict[str, Any]:
        with sweep_point(config, part, workdir) as (point, _, _):
            return point

    configs = baseline_configs(cores, workers, CLIENTS_PER_WORKER)
    n = min(SWEEP_DOCUMENTS, len(docs))
    sweep = []
    for config in configs:
        console.print(f"    sweep: {config} on {n} documents")
        sweep.append(run(config, docs[:n]))
        console.print(f"      {sweep[-1]['docs_per_s']} documents/s")
    best = max(sweep, key=lambda r: r["docs_per_s"])
    if n == len(docs):
        full = best
    else:
        chosen = next(c for c in configs if c.workers == best["workers"])
        console.print(f"    best {chosen}: every document")
        full = run(chosen, docs)
    return full | {"sweep": sweep, "sweep_documents": n}


def sample(docs: Sequence[LabelledDocument], n: int) -> list[int]:
    """`n` indices spread evenly over `docs`: a sample with the corpus's mix of lengths (the
    first n documents are not: the first 400 held 2.45 windows each against 2.34)."""
    n = min(n, len(docs))
    return [int(i * len(docs) / n) for i in range(n)]


def upload_long_baseline(url: str, docs: Sequence[LabelledDocument], timeout: float) -> dict:
    """One upload of `docs` to the old service's bulk call, by a client that waits `timeout`."""
    body = {"documents": [{"id": d.id, "text": d.text} for d in docs]}
    t = time.monotonic()
    classified = 0
    try:
        resp = httpx.post(f"{url}/classify/batch", json=body, timeout=timeout)
        seen = f"HTTP {resp.status_code} after {time.monotonic() - t:.1f} s"
        classified = len(resp.json()) if resp.status_code == 200 else 0
    except httpx.TimeoutException:
        seen = f"timed out after {time.monotonic() - t:.1f} s (client timeout {timeout:.0f} s)"
    except httpx.HTTPError as exc:
        seen = f"{type(exc).__name__} after {time.monotonic() - t:.1f} s"
    return {
        "documents": len(docs),
        "answer": seen,
        "elapsed_s": round(time.monotonic() - t, 2),
        "classified": classified,
    }


def run_baseline_gpu(
    docs: Sequence[LabelledDocument],
    windows: int,
    long_docs: Sequence[LabelledDocument],
    workers: dict[str, list[int]],
    workdir: Path,
    sampler: GpuSampler,
    budget: Budget,
) -> dict[str, Any]:
    """The old architecture on the GPU, in each precision of `workers` (FP16: `model.half()`,
    SDPA, the skeptic's first try; FP32 as it ran) swept over its worker counts on `docs`,
    with the GPU memory each worker holds; the long upload in one request on FP32's last
    point."""
    out: dict[str, Any] = {"documents": len(docs), "windows": windows}
    for precision, counts in workers.items():
        os.environ["BASELINE_PRECISION"] = precision  # read by bench/baseline/app.py
        configs = baseline_configs(os.cpu_count() or 1, counts, CLIENTS_PER_WORKER)
        points: list[dict[str, Any]] = []
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
                points.append(point)
                console.print(f"    {point['docs_per_s']} docs/s, GPU MiB per worker {held}")
                if long:
                    got = upload_long_baseline(url, long, LONG_TIMEOUT_S)
                    out["long_upload"] = got | {"precision": precision}
                    console.print(f"    {len(long)} long documents in one request: {got}")
                    # The worker still inside the abandoned call would make the master's
                    # graceful stop wait for it: end the workers first.
                    end_leftovers(pids - {gunicorn})
        best = max(points, key=lambda p: p["docs_per_s"]) if points else {}
        out[precision] = {"sweep": points, "best": best}
    return out
