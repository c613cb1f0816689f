"""The old architecture's side of the bench: its server (bench/baseline/app.py, started by
devstack/) swept over worker counts, each point driven by synchronous clients, one request
per document, as its users drove it."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.procs import CpuMeter, percentile
from bench.report import console
from corpus.doc_type import LabelledDocument
from devstack import services

SWEEP_DOCUMENTS = 300  # documents per sweep point; the best then runs every document
CLIENTS_PER_WORKER = 4  # enough that every worker always has a request waiting


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
        yield dataclasses.asdict(config) | result, url, gunicorn


def run_baseline_config(
    config: BaselineConfig, docs: Sequence[LabelledDocument], workdir: Path
) -> dict[str, Any]:
    with sweep_point(config, docs, workdir) as (point, _, _):
        return point


def run_baseline(
    docs: Sequence[LabelledDocument], cores: int, workers: Sequence[int], workdir: Path
) -> dict[str, Any]:
    """The tuned old architecture: the sweep over `workers` on the first SWEEP_DOCUMENTS
    documents, then its best configuration on every document."""
    configs = baseline_configs(cores, workers, CLIENTS_PER_WORKER)
    n = min(SWEEP_DOCUMENTS, len(docs))
    sweep = []
    for config in configs:
        console.print(f"    sweep: {config} on {n} documents")
        sweep.append(run_baseline_config(config, docs[:n], workdir))
        console.print(f"      {sweep[-1]['docs_per_s']} documents/s")
    best = max(sweep, key=lambda r: r["docs_per_s"])
    if n == len(docs):
        full = best
    else:
        chosen = next(c for c in configs if c.workers == best["workers"])
        console.print(f"    best {chosen}: every document")
        full = run_baseline_config(chosen, docs, workdir)
    return full | {"sweep": sweep, "sweep_documents": n}
