"""`make bench`: docq against the old architecture, side by side, in one run on this machine.

1. baseline: the old architecture (bench/baseline/app.py: Gunicorn + Uvicorn workers, the
   PyTorch FP32 model in each worker, one synchronous request per document), tuned: each
   worker runs cores / workers torch threads, and a sweep over the worker counts
   (`--baseline-workers`, 1, 2 and 4 by default, with `--baseline-clients-per-worker`
   clients each) keeps the best; the best then classifies every document of the corpus;
2. docq: one bulk upload of the same corpus through the API, Celery workers and a real
   Triton, until the job succeeds;
3. the ceiling: Triton alone gets the same windows packed by docq's packer with the model's
   batch size and token budget, sorted over the whole corpus (never more padding than
   docq's batcher sends), tokenized before the clock starts, with `--ceiling-in-flight`
   requests outstanding. pipeline_efficiency = docq / ceiling; it can exceed 1 only if docq
   computed fewer tokens, which `work_ratio` shows;
4. latency probes while bulk jobs run: `--accept-uploads` 1,000-document uploads
   (acceptance latency, each cancelled at once) and 3-document jobs (upload to result).

`--cores N` runs the whole bench (every process it starts) on the first N cores of this
machine, so that the same command measures a 2-core box on a 16-core one; the baseline's
threads follow it. Prints a table and writes `--out` (bench/results/pipeline.json, ignored
by git: a rehearsal stays there; a run quoted in bench/RESULTS.md is written beside it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from bench.procs import CpuMeter, find, listener, tree
from corpus.doc_type import LabelledDocument, generate
from devstack.services import (
    api_server,
    celery_worker,
    free_port,
    redis_server,
    stop,
    triton_server,
    wait_for,
)
from devstack.stack import SHARD_THREADS, TRITON_NICE, WORKER_NICE
from docq.catalog import ModelCatalog
from docq.config import REPO_ROOT, Settings
from docq.models import ModelSpec
from docq.store import connection
from docq.store.tenants import Tenants
from docq.text.packing import Batch, pack, pad
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import Window, split_all
from workers.inference import TritonInference

RESULTS = REPO_ROOT / "bench" / "results"
# Niceness and shard threads per worker process are the local stack's (devstack/stack.py).
console = Console()


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def use_cores(cores: int) -> list[int]:
    """Pin this process (and every process it starts) to its first `cores` CPUs."""
    available = sorted(os.sched_getaffinity(0))
    if not 1 <= cores <= len(available):
        raise ValueError(f"--cores must be between 1 and {len(available)}, not {cores}")
    chosen = available[:cores]
    os.sched_setaffinity(0, chosen)
    return chosen


# --- windows and padding ------------------------------------------------------------


def windows_of(docs: Sequence[LabelledDocument], model: ModelSpec) -> list[Window]:
    """Every document's windows, cut as the workers cut them for `model`."""
    tok = load_tokenizer(model.tokenizer_dir)
    spec = window_spec(tok, model.max_seq_len, model.stride)
    return split_all(tokenize(tok, [d.text for d in docs]), spec)


def ceiling_batches(windows: Sequence[Window], model: ModelSpec) -> list[Batch]:
    """The corpus's windows packed as docq's batcher packs them (the model's batch size and
    token budget), sorted over the whole corpus at once: the least padding this packer can
    give, so the ceiling never computes more than docq's workers."""
    return pack(windows, model.max_batch_size, model.budget)


def baseline_padding(windows: Sequence[Window]) -> float:
    """Real / computed tokens of the old architecture: each document's windows in one
    batch, padded to that document's own longest window."""
    by_doc: dict[int, list[Window]] = {}
    for w in windows:
        by_doc.setdefault(w.doc, []).append(w)
    computed = sum(pad(ws)[0].size for ws in by_doc.values())
    return sum(w.length for w in windows) / computed


def repository_spec(repository: Path, model: str) -> ModelSpec:
    """The model as the workers will see it, read from its config.pbtxt (no Triton needed)."""
    from google.protobuf import json_format

    from conversion import pbtxt

    config = pbtxt.read(repository / model / "config.pbtxt")
    as_json = json_format.MessageToDict(config, preserving_proto_field_name=True)
    return ModelSpec.from_triton_config(as_json, repository)


def padding_report(windows: Sequence[Window], ceiling: Sequence[Batch]) -> dict[str, Any]:
    real = sum(w.length for w in windows)
    computed = sum(b.computed_tokens for b in ceiling)
    return {
        "windows": len(windows),
        "real_tokens": real,
        "ceiling_computed_tokens": computed,
        "ceiling_padding_efficiency": round(real / computed, 4),
        "baseline_padding_efficiency": round(baseline_padding(windows), 4),
        # Neither side computes this; it is what fixed-shape inputs would cost.
        "pad_to_512_efficiency": round(real / (len(windows) * 512), 4),
        "single_window_documents": round(
            sum(1 for n in np.bincount([w.doc for w in windows]) if n == 1)
            / len({w.doc for w in windows}),
            3,
        ),
    }


# --- 1. the old architecture ---------------------------------------------------------


@dataclass(frozen=True)
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


async def _drive_baseline(
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
    port = free_port()
    threads = str(config.threads)
    env = {
        **os.environ,
        "BASELINE_THREADS": threads,
        "OMP_NUM_THREADS": threads,
        "MKL_NUM_THREADS": threads,
    }
    log = (workdir / f"baseline-{config.workers}w.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bench.baseline.app:app",
            "-k",
            "uvicorn_worker.UvicornWorker",
            "-w",
            str(config.workers),
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "300",
        ],
        cwd=REPO_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        probe = {"id": "probe", "text": "warm-up"}
        wait_for(
            lambda: httpx.post(f"{url}/classify", json=probe, timeout=30).status_code == 200,
            300,
            "baseline server",
            proc,
        )
        got = httpx.get(f"{url}/threads").json()["torch_threads"]
        if got != config.threads:
            raise RuntimeError(f"baseline worker runs {got} torch threads, not {config.threads}")
        yield url, proc.pid
    finally:
        stop(proc)
        log.close()


def run_baseline_config(
    config: BaselineConfig, docs: Sequence[LabelledDocument], workdir: Path
) -> dict[str, Any]:
    with baseline_server(config, workdir) as (url, gunicorn):
        meter = CpuMeter({"baseline (gunicorn + model copies)": gunicorn})
        meter.start()
        result = asyncio.run(_drive_baseline(url, docs, config.clients, 60.0))
        result["cpu_s"] = meter.stop()
    return {"workers": config.workers, "threads": config.threads, "clients": config.clients} | (
        result
    )


def run_baseline(
    docs: Sequence[LabelledDocument], args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    """The tuned old architecture: the sweep (on the first `args.baseline_sweep_documents`
    documents, or all of them with 0), then its best configuration on every document.

    Reads from `args`: cores, baseline_workers (a list), baseline_clients_per_worker,
    baseline_sweep_documents.
    """
    configs = baseline_configs(args.cores, args.baseline_workers, args.baseline_clients_per_worker)
    n = args.baseline_sweep_documents or len(docs)
    sweep = []
    for config in configs:
        console.print(f"    sweep: {config} on {min(n, len(docs))} documents")
        sweep.append(run_baseline_config(config, docs[:n], workdir))
        console.print(f"      {sweep[-1]['docs_per_s']} documents/s")
    best = max(sweep, key=lambda r: r["docs_per_s"])
    if n >= len(docs):
        full = best
    else:
        chosen = next(c for c in configs if c.workers == best["workers"])
        console.print(f"    best {chosen}: every document")
        full = run_baseline_config(chosen, docs, workdir)
    return full | {"sweep": sweep, "sweep_documents": min(n, len(docs))}


# --- 2. docq -----------------------------------------------------------------------


class Stack:
    """redis, tritonserver, `bulk_workers` bulk Celery workers, a priority worker and the
    API on free ports, started as the local stack starts them (devstack/)."""

    def __init__(self, repo: Path, workdir: Path, shard_size: int, bulk_workers: int = 1) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size
        self.bulk_workers = bulk_workers

    def __enter__(self) -> Stack:
        self._stack = ExitStack()
        redis_url = self._stack.enter_context(redis_server(self.workdir / "redis"))
        self.triton_url = self._stack.enter_context(
            triton_server(self.repo, self.workdir / "triton.log")
        )
        self.settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=self.triton_url,
            model_repository=self.repo,
            shard_size=self.shard_size,
        )
        # The bench is one tenant with a key of its own, as a client application would be.
        tenants = Tenants(connection.connect(redis_url), secret=self.settings.api_key_secret)
        self.headers = {"Authorization": f"Bearer {tenants.create_key('bench')[1]}"}
        env = dict(os.environ)
        for name, value in self.settings.model_dump().items():
            if value is not None:
                env[f"DOCQ_{name.upper()}"] = str(value)
        # As the Procfile runs them: workers for bulk jobs, one for the small-job lane,
        # each with its metrics endpoint.
        lanes = [("cpu", f"bulk{i}") for i in range(self.bulk_workers)]
        lanes.append(("cpu-priority", "priority"))
        self.metrics_ports = [free_port() for _ in lanes]
        self.workers = [
            self._stack.enter_context(
                celery_worker(
                    {**env, "DOCQ_WORKER_METRICS_PORT": str(port)},
                    self.workdir / f"{name}.log",
                    queue,
                    name,
                    SHARD_THREADS,
                )
            )
            for port, (queue, name) in zip(self.metrics_ports, lanes, strict=True)
        ]
        self.bulk_ports = self.metrics_ports[: self.bulk_workers]
        self.url = self._stack.enter_context(api_server(env, self.workdir / "api.log"))
        self.api_pid = listener(int(self.url.rsplit(":", 1)[1]))
        port = self.triton_url.rsplit(":", 1)[1]
        self.triton_pid = find("bin/tritonserver", f"--grpc-port={port}")
        # Batch inference yields the CPU to request handling on this shared box, as the
        # local stack does; on a real deployment the API and Triton have hosts of their own.
        for pid in tree(self.triton_pid):
            os.setpriority(os.PRIO_PROCESS, pid, TRITON_NICE)
        for worker in self.workers:
            os.setpriority(os.PRIO_PROCESS, worker.pid, WORKER_NICE)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def meter(self) -> CpuMeter:
        roots = {"api": self.api_pid, "triton": self.triton_pid}
        for i, worker in enumerate(self.workers[:-1]):
            roots[f"bulk worker {i}"] = worker.pid
        roots["priority worker"] = self.workers[-1].pid
        return CpuMeter(roots)


def _wait_job(http: httpx.Client, job_id: str, poll: float) -> dict[str, Any]:
    while True:
        job = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(poll)


def _submit(http: httpx.Client, docs: Sequence[LabelledDocument]) -> tuple[str, float]:
    body = json.dumps({"documents": [{"id": d.id, "text": d.text} for d in docs]}).encode()
    t = time.perf_counter()
    resp = http.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
    resp.raise_for_status()
    return resp.json()["id"], (time.perf_counter() - t) * 1000


def worker_batches(ports: Sequence[int]) -> dict[str, float]:
    """What the workers' batchers sent so far, summed over their metrics endpoints."""
    total: dict[str, float] = {}
    for port in ports:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.startswith("docq_worker_") and sample.name.endswith("_total"):
                    key = sample.name + sample.labels.get("kind", "")
                    total[key] = total.get(key, 0.0) + sample.value
    return total


def run_docq(
    stack: Stack, docs: Sequence[LabelledDocument], profile_s: float = 0
) -> dict[str, Any]:
    """Throughput: one bulk upload of the corpus, timed from the upload to `succeeded`;
    with `profile_s`, py-spy samples the first bulk worker and Triton meanwhile."""
    http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120)
    before = worker_batches(stack.bulk_ports)
    meter = stack.meter()
    meter.start()
    t0 = time.perf_counter()
    job_id, accept_ms = _submit(http, docs)
    profilers = start_profiles(stack, profile_s) if profile_s else []
    job = _wait_job(http, job_id, 0.25)
    elapsed = time.perf_counter() - t0
    for proc in profilers:
        proc.wait()
    after = worker_batches(stack.bulk_ports)
    sent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    results = sum(1 for r in _results(http, job_id) if "label" in r)
    return {
        "computed_tokens": int(sent["docq_worker_tokens_totalcomputed"]),
        "real_tokens": int(sent["docq_worker_tokens_totalreal"]),
        "batches": int(sent["docq_worker_batches_total"]),
        "worker_padding_efficiency": round(
            sent["docq_worker_tokens_totalreal"] / sent["docq_worker_tokens_totalcomputed"], 4
        ),
        "worker_windows_per_batch": round(
            sent["docq_worker_windows_total"] / sent["docq_worker_batches_total"], 2
        ),
        "status": job["status"],
        "documents": job["documents"],
        "classified": results,
        "failures": job["documents"] - results,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(job["documents"] / elapsed, 3),
        "bulk_accept_ms": round(accept_ms, 1),
        "cpu_s": meter.stop(),
    }


def start_profiles(stack: Stack, seconds: float) -> list[subprocess.Popen[bytes]]:
    """py-spy on the first bulk worker and on Triton's model stub (where the model runs), as
    collapsed stacks in bench/results/profile-*.txt."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    stub = find("triton_python_backend_stub")
    out = []
    for name, pid in (("worker", stack.workers[0].pid), ("triton-stub", stub)):
        cmd = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid)]
        cmd += ["--duration", str(int(seconds)), "--format", "raw", "--nonblocking"]
        cmd += ["--output", str(RESULTS / f"profile-{name}.txt")]
        out.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return out


def profile_summary(path: Path, top: int = 8) -> dict[str, Any]:
    """Where a py-spy profile's samples are, by innermost frame and by every frame on the
    stack, as shares of the samples (collapsed stacks: `frame;frame;... count`)."""
    inner: dict[str, int] = {}
    anywhere: dict[str, int] = {}
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = [
            f.split(" (")[0] + " (" + f.split(" (")[-1].split("/")[-1] for f in stack.split(";")
        ]
        inner[frames[-1]] = inner.get(frames[-1], 0) + n
        for f in set(frames):
            anywhere[f] = anywhere.get(f, 0) + n

    def share(d: dict[str, int]) -> dict[str, float]:
        best = sorted(d.items(), key=lambda kv: -kv[1])[:top]
        return {k: round(v / total, 3) for k, v in best}

    return {"samples": total, "self": share(inner), "total": share(anywhere)}


def _results(http: httpx.Client, job_id: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    cursor: str | None = "0"
    while cursor is not None:
        page = http.get(f"/v1/jobs/{job_id}/results", params={"limit": 1000, "cursor": cursor})
        out += page.json()["data"]
        cursor = page.json()["next_cursor"]
    return out


def run_probes(
    stack: Stack,
    background: Sequence[LabelledDocument],
    small: Sequence[LabelledDocument],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """Latency while bulk jobs run: `args.accept_uploads` 1,000-document uploads (acceptance;
    each cancelled at once, so it adds no work) and 3-document jobs (upload to `succeeded`).
    A new bulk job of `background` starts whenever the last one ends, until enough uploads
    were timed; the one still running then is cancelled."""
    http = httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120)
    accept_body = json.dumps(
        {
            "documents": [
                {"id": f"a{i}", "text": background[i % len(background)].text} for i in range(1000)
            ]
        }
    ).encode()
    running = threading.Event()
    accept_ms: list[float] = []
    small_s: list[float] = []

    def accept_probe() -> None:
        with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=60) as c:
            while running.is_set() and len(accept_ms) < args.accept_uploads:
                t = time.perf_counter()
                r = c.post(
                    "/v1/jobs", content=accept_body, headers={"content-type": "application/json"}
                )
                accept_ms.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                c.delete(f"/v1/jobs/{r.json()['id']}")  # acceptance only: skip the work
                time.sleep(args.accept_every)

    def small_probe() -> None:
        with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=60) as c:
            i = 0
            while running.is_set():
                batch = [small[(i + k) % len(small)] for k in range(3)]
                i += 3
                t = time.perf_counter()  # from the upload to the result
                job_id, _ = _submit(c, batch)
                job = _wait_job(c, job_id, 0.02)
                if job["status"] == "succeeded" and running.is_set():
                    small_s.append(time.perf_counter() - t)
                time.sleep(args.small_every)

    bulk_id, _ = _submit(http, background)
    bulk_jobs = 1
    while http.get(f"/v1/jobs/{bulk_id}").json()["status"] == "queued":
        time.sleep(0.1)
    running.set()
    probes = [threading.Thread(target=accept_probe), threading.Thread(target=small_probe)]
    for p in probes:
        p.start()
    while len(accept_ms) < args.accept_uploads and probes[0].is_alive():
        if http.get(f"/v1/jobs/{bulk_id}").json()["status"] in ("succeeded", "failed"):
            bulk_id, _ = _submit(http, background)
            bulk_jobs += 1
        time.sleep(0.25)
    running.clear()
    for p in probes:
        p.join()
    http.delete(f"/v1/jobs/{bulk_id}")
    return {
        "background_jobs": {"documents": len(background), "jobs": bulk_jobs},
        "accept_ms": {
            "n": len(accept_ms),
            "p50": round(percentile(accept_ms, 50), 1),
            "p99": round(percentile(accept_ms, 99), 1),
            "max": round(max(accept_ms), 1),
            "samples": [round(ms, 1) for ms in accept_ms],
        },
        "small_job_s": {
            "n": len(small_s),
            "p50": round(percentile(small_s, 50), 2),
            "p95": round(percentile(small_s, 95), 2),
            "samples": [round(s, 3) for s in small_s],
        },
    }


# --- 3. the ceiling: Triton alone -------------------------------------------------------


def run_triton_alone(
    stack: Stack,
    docs: Sequence[LabelledDocument],
    model: str,
    in_flight: int | None = None,
) -> dict[str, Any]:
    """The corpus's windows as ceiling_batches() packs them, straight to Triton with
    `in_flight` requests outstanding (default: twice what docq's bulk workers keep), timed
    from the first request to the last answer; tokenizing happens before the clock starts."""
    catalog = ModelCatalog(stack.triton_url, stack.repo)
    spec = catalog.spec(model)
    catalog.close()
    windows = windows_of(docs, spec)
    batches = ceiling_batches(windows, spec)
    in_flight = in_flight or 2 * stack.bulk_workers * stack.settings.triton_max_in_flight
    triton = TritonInference(stack.triton_url, max_in_flight=in_flight, timeout_s=300)
    meter = CpuMeter({"triton": stack.triton_pid})
    meter.start()
    t0 = time.perf_counter()
    triton.infer(spec, batches)
    elapsed = time.perf_counter() - t0
    triton.close()
    return {
        "documents": len(docs),
        "windows": len(windows),
        "batches": len(batches),
        "computed_tokens": sum(b.computed_tokens for b in batches),
        "real_tokens": sum(b.real_tokens for b in batches),
        "in_flight": in_flight,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(len(docs) / elapsed, 3),
        "cpu_s": meter.stop(),
        "padding": padding_report(windows, batches),
    }


def efficiency(docq: dict[str, Any], ceiling: dict[str, Any]) -> dict[str, float]:
    """docq's throughput over the ceiling's on the same documents, and the work each
    computed: with work_ratio >= 1 (docq padded at least as much), efficiency <= 1 unless
    the ceiling was not saturated."""
    return {
        "pipeline_efficiency": round(docq["docs_per_s"] / ceiling["docs_per_s"], 3),
        "work_ratio": round(docq["computed_tokens"] / ceiling["computed_tokens"], 4),
    }


def cpu_use(documents: int, baseline: dict[str, Any], docq: dict[str, Any]) -> dict[str, Any]:
    """What each side got of the machine and did with it: cores busy (its processes' CPU
    seconds over its wall time) and documents per CPU second.

    On a shared VM the CPU a phase gets varies (a baseline run has had 0.97 of 2 cores where
    its sweep point had 1.88), and documents/s follows it; documents per CPU second does
    not, so `cpu_ratio` shows which side does more with the same CPU.
    """
    if not baseline:
        return {}

    def use(side: dict[str, Any]) -> tuple[float, float]:
        cpu = sum(side["cpu_s"].values())
        return round(cpu / side["elapsed_s"], 2), round(documents / cpu, 3)

    base_busy, base_rate = use(baseline)
    docq_busy, docq_rate = use(docq)
    return {
        "baseline_cores_busy": base_busy,
        "docq_cores_busy": docq_busy,
        "baseline_docs_per_cpu_s": base_rate,
        "docq_docs_per_cpu_s": docq_rate,
        "cpu_ratio": round(docq_rate / base_rate, 2),
    }


def comparable(s: dict[str, Any], tolerance: float = 0.15) -> bool:
    """Whether both sides had about the same CPU (cores busy within `tolerance`), so that
    their documents/s ratio compares the architectures and not the machine's moods."""
    base, docq = s.get("baseline_cores_busy"), s.get("docq_cores_busy")
    return base is not None and docq is not None and abs(base - docq) <= tolerance * docq


# --- the run --------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--model", default="doc-type")
    ap.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    ap.add_argument("--shard-size", type=int, default=64)
    ap.add_argument(
        "--cores",
        type=int,
        default=len(os.sched_getaffinity(0)),
        help="run every process on this machine's first N cores (default: all)",
    )
    ap.add_argument(
        "--baseline-workers",
        type=lambda s: [int(x) for x in s.split(",")],
        default=[1, 2, 4],
        help="Gunicorn worker counts to sweep, e.g. 1,2,4 (threads: cores / workers)",
    )
    ap.add_argument("--baseline-clients-per-worker", type=int, default=4)
    ap.add_argument(
        "--baseline-sweep-documents",
        type=int,
        default=300,
        help="documents per sweep point (0: all); the best then runs every document",
    )
    ap.add_argument("--docq-workers", type=int, default=1, help="bulk Celery worker processes")
    ap.add_argument(
        "--ceiling-in-flight", type=int, default=0, help="0: twice what the workers keep"
    )
    ap.add_argument("--probe-documents", type=int, default=400)
    ap.add_argument("--accept-uploads", type=int, default=200)
    ap.add_argument("--accept-every", type=float, default=0.5)
    ap.add_argument("--small-every", type=float, default=2.0)
    ap.add_argument(
        "--skip", action="append", default=[], choices=["baseline", "probes"], help="leave out"
    )
    ap.add_argument(
        "--padding-only",
        action="store_true",
        help="only what each side computes for the corpus (seconds, no services)",
    )
    ap.add_argument(
        "--profile", type=float, default=0, help="py-spy the bulk worker and Triton for N s"
    )
    ap.add_argument(
        "--table", type=Path, metavar="JSON", help="print the table of a saved run, run nothing"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "pipeline.json")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.table:
        print_table(json.loads(args.table.read_text()))
        return
    cores = use_cores(args.cores)
    docs = generate(args.documents, args.seed)
    if args.padding_only:
        spec = repository_spec(args.repository, args.model)
        windows = windows_of(docs, spec)
        report = {
            "command": "python -m bench.pipeline " + " ".join(sys.argv[1:]),
            "documents": len(docs),
            "seed": args.seed,
            "model": args.model,
            "max_batch_size": spec.max_batch_size,
            "token_budget": spec.budget,
        } | padding_report(windows, ceiling_batches(windows, spec))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        console.print(report)
        return
    small = [d for d in generate(300, args.seed + 1) if len(d.text) < 1500]
    workdir = Path(tempfile.mkdtemp(prefix="docq-bench-"))
    started = time.perf_counter()
    console.print(
        f"[bold]docq bench[/]: {len(docs)} documents (seed {args.seed}) on cores {cores}, "
        f"logs in {workdir}"
    )
    baseline: dict[str, Any] = {}
    if "baseline" not in args.skip:
        console.print(f"1/4 baseline: sweep over {args.baseline_workers} workers")
        baseline = run_baseline(docs, args, workdir)
        console.print(f"    {baseline}")
    probes: dict[str, Any] = {}
    with Stack(args.repository, workdir, args.shard_size, args.docq_workers) as stack:
        console.print("2/4 docq: bulk upload of the corpus until it succeeds")
        docq = run_docq(stack, docs, args.profile)
        console.print(f"    {docq}")
        console.print("3/4 ceiling: the same windows, packed, straight to Triton")
        alone = run_triton_alone(stack, docs, args.model, args.ceiling_in_flight or None)
        console.print(f"    {alone}")
        if "probes" not in args.skip:
            console.print(
                f"4/4 latency: {args.accept_uploads} uploads during "
                f"{args.probe_documents}-document bulk jobs"
            )
            probes = run_probes(stack, docs[: args.probe_documents], small, args)
            console.print(f"    acceptance: {probes['accept_ms'] | {'samples': '...'}}")
    summary = summarise(args, docs, baseline, docq, alone, probes)
    summary["bench_seconds"] = round(time.perf_counter() - started, 1)
    summary["machine"] = {"cpus": os.cpu_count(), "cores_used": cores}
    summary["profiles"] = {
        p.stem: profile_summary(p)
        for p in sorted(RESULTS.glob("profile-*.txt"))
        if args.profile and p.stat().st_size
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    console.print(f"wrote {args.out}")
    print_table(summary)


def summarise(
    args: argparse.Namespace,
    docs: Sequence[LabelledDocument],
    baseline: dict[str, Any],
    docq: dict[str, Any],
    alone: dict[str, Any],
    probes: dict[str, Any],
) -> dict[str, Any]:
    padding = alone["padding"]
    base_rate = baseline.get("docs_per_s")
    return {
        "command": "python -m bench.pipeline " + " ".join(sys.argv[1:]),
        "documents": len(docs),
        "seed": args.seed,
        "docq_docs_per_s": docq["docs_per_s"],
        "baseline_docs_per_s": base_rate,
        "baseline_best": {k: baseline.get(k) for k in ("workers", "threads", "clients")},
        "ratio": round(docq["docs_per_s"] / base_rate, 2) if base_rate else None,
        **cpu_use(len(docs), baseline, docq),
        "baseline_timeouts": baseline.get("timeouts"),
        "docq_failures": docq["failures"],
        "ceiling_docs_per_s": alone["docs_per_s"],
        **efficiency(docq, alone),
        "padding_efficiency": docq["worker_padding_efficiency"],
        "ceiling_padding_efficiency": padding["ceiling_padding_efficiency"],
        "baseline_padding_efficiency": padding["baseline_padding_efficiency"],
        "pad_to_512_efficiency": padding["pad_to_512_efficiency"],
        "worker_windows_per_batch": docq["worker_windows_per_batch"],
        "accept_p99_ms": probes.get("accept_ms", {}).get("p99"),
        "accept_n": probes.get("accept_ms", {}).get("n"),
        "small_job_p95_s": probes.get("small_job_s", {}).get("p95"),
        "cpu_s": {
            "baseline": baseline.get("cpu_s"),
            "docq": docq["cpu_s"],
            "ceiling": alone["cpu_s"],
        },
        "detail": {
            "baseline": baseline,
            "docq": docq,
            "probes": probes,
            "ceiling": alone,
        },
    }


def print_table(s: dict[str, Any]) -> None:
    detail = s["detail"]
    # Runs saved before cpu_use existed: the same figures from their raw samples.
    s = cpu_use(s["documents"], detail["baseline"], detail["docq"]) | s
    targets = {
        "ratio": (">= 1.5", lambda v: v is not None and v >= 1.5),
        "docq_failures": ("0", lambda v: v == 0),
        "pipeline_efficiency": (">= 0.85", lambda v: v >= 0.85),
        "padding_efficiency": (">= 0.90", lambda v: v >= 0.90),
        "accept_p99_ms": ("<= 100", lambda v: v is not None and v <= 100),
        "small_job_p95_s": ("<= 2", lambda v: v is not None and v <= 2),
    }
    table = Table(title=f"docq bench: {s['documents']} documents, {s['bench_seconds']} s")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("target")
    table.add_column("met")
    for key in (
        "docq_docs_per_s",
        "baseline_docs_per_s",
        "baseline_best",
        "ratio",
        "baseline_cores_busy",
        "docq_cores_busy",
        "baseline_docs_per_cpu_s",
        "docq_docs_per_cpu_s",
        "cpu_ratio",
        "baseline_timeouts",
        "docq_failures",
        "ceiling_docs_per_s",
        "pipeline_efficiency",
        "work_ratio",
        "padding_efficiency",
        "ceiling_padding_efficiency",
        "baseline_padding_efficiency",
        "pad_to_512_efficiency",
        "worker_windows_per_batch",
        "accept_p99_ms",
        "accept_n",
        "small_job_p95_s",
    ):
        target, check = targets.get(key, ("", None))
        if key not in s:  # e.g. --skip baseline: no CPU figures to compare
            continue
        met = "" if check is None else ("yes" if check(s[key]) else "NO")
        if key == "ratio" and not comparable(s):
            met = "unfair"
            table.caption = (
                "unfair: the two sides had unequal CPU (cores busy differ by more than 15%); "
                "cpu_ratio compares them"
            )
        table.add_row(key, json.dumps(s[key]), target, met)
    for phase, cpu in s["cpu_s"].items():
        table.add_row(f"cpu seconds: {phase}", json.dumps(cpu), "", "")
    console.print(table)


if __name__ == "__main__":
    main()
