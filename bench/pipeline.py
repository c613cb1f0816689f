"""`make bench`: docq against the old architecture, side by side, in one run on this machine.

1. baseline: the old architecture (bench/baseline/app.py: Gunicorn + Uvicorn workers, the
   PyTorch FP32 model in each worker, one synchronous request per document), driven by
   concurrent clients with a 60 s timeout, for a fixed time;
2. docq: one bulk upload of the corpus through the API, Celery workers and a real Triton,
   until the job succeeds; meanwhile 1,000-document uploads (acceptance latency, cancelled
   at once) and 3-document jobs (time to result) arrive;
3. Triton alone: the same windows, packed the same way, sent straight to the same Triton
   with the same number of requests in flight: the ceiling for the pipeline.

Prints a table and writes bench/results/pipeline.json.
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from rich.table import Table

from bench.procs import CpuMeter, find, tree
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
from docq.text.packing import pack, padding_efficiency
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import split_all
from workers.inference import TritonInference

RESULTS = REPO_ROOT / "bench" / "results"
# Niceness and shard threads per worker process are the local stack's (devstack/stack.py).
console = Console()


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


# --- corpus and padding -------------------------------------------------------------


def padding_report(
    docs: Sequence[LabelledDocument], repo: Path, model: str, shard: int
) -> dict[str, Any]:
    """Padding efficiency of docq's packer (per shard, as the workers pack) vs pad-to-512."""
    tok = load_tokenizer(repo / model / "tokenizer")
    spec = window_spec(tok, 512, 64)
    batches, windows, single = [], [], 0
    for start in range(0, len(docs), shard):
        ws = split_all(tokenize(tok, [d.text for d in docs[start : start + shard]]), spec)
        single += sum(1 for n in np.bincount([w.doc for w in ws]) if n == 1)
        windows += ws
        batches += pack(ws, max_batch_size=8)
    real = sum(w.length for w in windows)
    return {
        "windows": len(windows),
        "real_tokens": real,
        "padding_efficiency": round(padding_efficiency(batches), 4),
        "pad_to_512_efficiency": round(real / (len(windows) * 512), 4),
        "single_window_documents": round(single / len(docs), 3),
    }


# --- 1. the old architecture ---------------------------------------------------------


async def _drive_baseline(
    url: str, docs: Sequence[LabelledDocument], clients: int, seconds: float, timeout: float
) -> dict[str, Any]:
    queue: asyncio.Queue[LabelledDocument] = asyncio.Queue()
    for d in docs:
        queue.put_nowait(d)
    done, timeouts, errors, latencies = 0, 0, 0, []
    deadline = time.monotonic() + seconds

    async def client() -> None:
        nonlocal done, timeouts, errors
        async with httpx.AsyncClient(base_url=url, timeout=timeout) as http:
            while time.monotonic() < deadline and not queue.empty():
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
        "documents_done": done,
        "timeouts": timeouts,
        "errors": errors,
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(done / elapsed, 3),
        "latency_p50_s": round(percentile(latencies, 50), 2),
        "latency_p95_s": round(percentile(latencies, 95), 2),
    }


def run_baseline(
    docs: Sequence[LabelledDocument], args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    port = free_port()
    log = (workdir / "baseline.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "bench.baseline.app:app",
            "-k",
            "uvicorn_worker.UvicornWorker",
            "-w",
            str(args.baseline_workers),
            "-b",
            f"127.0.0.1:{port}",
            "--timeout",
            "300",
        ],
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        probe = {"id": "probe", "text": "warm-up"}
        wait_for(
            lambda: httpx.post(f"{url}/classify", json=probe, timeout=30).status_code == 200,
            180,
            "baseline server",
            proc,
        )
        meter = CpuMeter({"baseline (gunicorn + model copies)": proc.pid})
        meter.start()
        result = asyncio.run(
            _drive_baseline(url, docs, args.baseline_clients, args.baseline_seconds, 60.0)
        )
        result["cpu_s"] = meter.stop()
        return result
    finally:
        stop(proc)


# --- 2. docq -----------------------------------------------------------------------


class Stack:
    """redis, tritonserver, a bulk and a priority Celery worker, and the API on free ports."""

    def __init__(self, repo: Path, workdir: Path, shard_size: int) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size

    def __enter__(self) -> Stack:
        from contextlib import ExitStack

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
        env = dict(os.environ)
        for name, value in self.settings.model_dump().items():
            if value is not None:
                env[f"DOCQ_{name.upper()}"] = str(value)
        # As the Procfile runs them: one worker for bulk jobs, one for the small-job lane,
        # each with its metrics endpoint.
        self.metrics_ports = [free_port(), free_port()]
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
            for port, queue, name in zip(
                self.metrics_ports, ("cpu", "cpu-priority"), ("bulk", "priority"), strict=True
            )
        ]
        self.url = self._stack.enter_context(api_server(env, self.workdir / "api.log"))
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


def _wait_job(http: httpx.Client, job_id: str, poll: float) -> dict[str, Any]:
    while True:
        job = http.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(poll)


def _meter(stack: Stack) -> CpuMeter:
    return CpuMeter(
        {
            "api": stack.api.pid,
            "bulk worker": stack.workers[0].pid,
            "priority worker": stack.workers[1].pid,
            "triton": stack.triton_pid,
        }
    )


def _submit(http: httpx.Client, docs: Sequence[LabelledDocument]) -> tuple[str, float]:
    body = json.dumps({"documents": [{"id": d.id, "text": d.text} for d in docs]}).encode()
    t = time.perf_counter()
    resp = http.post("/v1/jobs", content=body, headers={"content-type": "application/json"})
    resp.raise_for_status()
    return resp.json()["id"], (time.perf_counter() - t) * 1000


def worker_batches(port: int) -> dict[str, float]:
    """What a worker's batcher sent so far, read from its metrics endpoint."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics").text
    total: dict[str, float] = {}
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
    with `profile_s`, py-spy samples the bulk worker and Triton meanwhile."""
    http = httpx.Client(base_url=stack.url, timeout=120)
    before = worker_batches(stack.metrics_ports[0])
    meter = _meter(stack)
    meter.start()
    t0 = time.perf_counter()
    job_id, accept_ms = _submit(http, docs)
    profilers = start_profiles(stack, profile_s) if profile_s else []
    job = _wait_job(http, job_id, 0.25)
    elapsed = time.perf_counter() - t0
    for proc in profilers:
        proc.wait()
    after = worker_batches(stack.metrics_ports[0])
    sent = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
    results = sum(1 for r in _results(http, job_id) if "label" in r)
    return {
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
    """py-spy on the bulk worker and on Triton's model stub (where the model runs), as
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


def _frame(frame: str) -> str:
    """`func (/long/path/file.py:12)` -> `func (file.py:12)`."""
    func, _, where = frame.partition(" (")
    return f"{func} ({where.rsplit('/', 1)[-1]}" if where else func


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
    """Latency while a bulk job runs: 1,000-document uploads (acceptance, then cancelled so
    they add no work) and 3-document jobs (upload to `succeeded`)."""
    http = httpx.Client(base_url=stack.url, timeout=120)
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
        with httpx.Client(base_url=stack.url, timeout=60) as c:
            while running.is_set():
                t = time.perf_counter()
                r = c.post(
                    "/v1/jobs", content=accept_body, headers={"content-type": "application/json"}
                )
                accept_ms.append((time.perf_counter() - t) * 1000)
                r.raise_for_status()
                c.delete(f"/v1/jobs/{r.json()['id']}")  # acceptance only: skip the work
                time.sleep(args.accept_every)

    def small_probe() -> None:
        with httpx.Client(base_url=stack.url, timeout=60) as c:
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
    while http.get(f"/v1/jobs/{bulk_id}").json()["status"] == "queued":
        time.sleep(0.1)
    running.set()
    probes = [threading.Thread(target=accept_probe), threading.Thread(target=small_probe)]
    for p in probes:
        p.start()
    job = _wait_job(http, bulk_id, 0.25)
    running.clear()
    for p in probes:
        p.join()
    return {
        "background_job": {"documents": job["documents"], "status": job["status"]},
        "accept_ms": {
            "n": len(accept_ms),
            "p50": round(percentile(accept_ms, 50), 1),
            "p99": round(percentile(accept_ms, 99), 1),
            "samples": [round(ms, 1) for ms in accept_ms],
        },
        "small_job_s": {
            "n": len(small_s),
            "p50": round(percentile(small_s, 50), 2),
            "p95": round(percentile(small_s, 95), 2),
        },
    }


# --- 3. Triton alone ----------------------------------------------------------------


def run_triton_alone(stack: Stack, docs: Sequence[LabelledDocument], model: str) -> dict[str, Any]:
    """The same windows, packed per shard as the workers do, straight to Triton (no queue)."""
    catalog = ModelCatalog(stack.triton_url, stack.repo)
    spec = catalog.spec(model)
    tok = load_tokenizer(spec.tokenizer_dir)
    wspec = window_spec(tok, spec.max_seq_len, spec.stride)
    triton = TritonInference(
        stack.triton_url, max_in_flight=stack.settings.triton_max_in_flight, timeout_s=300
    )
    meter = CpuMeter({"triton": stack.triton_pid})
    meter.start()
    t0 = time.perf_counter()
    for start in range(0, len(docs), stack.shard_size):
        chunk = docs[start : start + stack.shard_size]
        windows = split_all(tokenize(tok, [d.text for d in chunk]), wspec)
        triton.infer(spec, pack(windows, spec.max_batch_size))
    elapsed = time.perf_counter() - t0
    triton.close()
    catalog.close()
    return {
        "documents": len(docs),
        "elapsed_s": round(elapsed, 1),
        "docs_per_s": round(len(docs) / elapsed, 3),
        "cpu_s": meter.stop(),
    }


# --- the run --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--model", default="doc-type")
    ap.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    ap.add_argument("--shard-size", type=int, default=64)
    ap.add_argument("--baseline-seconds", type=float, default=150.0)
    ap.add_argument("--baseline-clients", type=int, default=16)
    ap.add_argument("--baseline-workers", type=int, default=2)
    ap.add_argument("--triton-alone-documents", type=int, default=600)
    ap.add_argument("--probe-documents", type=int, default=400)
    ap.add_argument("--accept-every", type=float, default=4.0)
    ap.add_argument("--small-every", type=float, default=2.0)
    ap.add_argument(
        "--profile", type=float, default=0, help="py-spy the bulk worker and Triton for N s"
    )
    args = ap.parse_args(argv)

    docs = generate(args.documents, args.seed)
    small = [d for d in generate(300, args.seed + 1) if len(d.text) < 1500]
    workdir = Path(tempfile.mkdtemp(prefix="docq-bench-"))
    started = time.perf_counter()
    console.print(
        f"[bold]docq bench[/]: {len(docs)} documents (seed {args.seed}), logs in {workdir}"
    )

    padding = padding_report(docs, args.repository, args.model, args.shard_size)
    console.print(f"padding: {padding}")
    console.print(
        f"1/3 baseline: {args.baseline_clients} clients for {args.baseline_seconds:.0f} s"
    )
    baseline = run_baseline(docs, args, workdir)
    console.print(f"    {baseline}")
    with Stack(args.repository, workdir, args.shard_size) as stack:
        console.print("2/3 docq: bulk upload of the corpus until it succeeds")
        docq = run_docq(stack, docs, args.profile)
        console.print(f"    {docq}")
        console.print(f"    latency probes during a {args.probe_documents}-document bulk job")
        probes = run_probes(stack, docs[: args.probe_documents], small, args)
        console.print(f"    {probes}")
        console.print(f"3/3 Triton alone: {args.triton_alone_documents} documents")
        alone = run_triton_alone(stack, docs[: args.triton_alone_documents], args.model)
        console.print(f"    {alone}")

    summary = {
        "documents": len(docs),
        "docq_docs_per_s": docq["docs_per_s"],
        "baseline_docs_per_s": baseline["docs_per_s"],
        "ratio": round(docq["docs_per_s"] / baseline["docs_per_s"], 2)
        if baseline["docs_per_s"]
        else None,
        "baseline_timeouts": baseline["timeouts"],
        "docq_failures": docq["failures"],
        "triton_alone_docs_per_s": alone["docs_per_s"],
        "pipeline_efficiency": round(docq["docs_per_s"] / alone["docs_per_s"], 3),
        "padding_efficiency": docq["worker_padding_efficiency"],
        "packer_padding_efficiency": padding["padding_efficiency"],
        "pad_to_512_efficiency": padding["pad_to_512_efficiency"],
        "worker_windows_per_batch": docq["worker_windows_per_batch"],
        "accept_p99_ms": probes["accept_ms"]["p99"],
        "small_job_p95_s": probes["small_job_s"]["p95"],
        "cpu_s": {
            "baseline": baseline["cpu_s"],
            "docq": docq["cpu_s"],
            "triton_alone": alone["cpu_s"],
        },
        "detail": {
            "baseline": baseline,
            "docq": docq,
            "probes": probes,
            "triton_alone": alone,
            "padding": padding,
        },
        "profiles": {
            p.stem: profile_summary(p)
            for p in sorted(RESULTS.glob("profile-*.txt"))
            if args.profile and p.stat().st_size
        },
        "bench_seconds": round(time.perf_counter() - started, 1),
        "machine": {"cpus": os.cpu_count()},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "pipeline.json").write_text(json.dumps(summary, indent=2) + "\n")
    print_table(summary)


def print_table(s: dict[str, Any]) -> None:
    targets = {
        "ratio": (">= 3", lambda v: v is not None and v >= 3),
        "docq_failures": ("0", lambda v: v == 0),
        "pipeline_efficiency": (">= 0.85", lambda v: v >= 0.85),
        "padding_efficiency": (">= 0.90", lambda v: v >= 0.90),
        "accept_p99_ms": ("<= 100", lambda v: v <= 100),
        "small_job_p95_s": ("<= 2", lambda v: v <= 2),
    }
    table = Table(title=f"docq bench: {s['documents']} documents, {s['bench_seconds']} s")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target")
    table.add_column("met")
    for key in (
        "docq_docs_per_s",
        "baseline_docs_per_s",
        "ratio",
        "baseline_timeouts",
        "docq_failures",
        "triton_alone_docs_per_s",
        "pipeline_efficiency",
        "padding_efficiency",
        "packer_padding_efficiency",
        "pad_to_512_efficiency",
        "worker_windows_per_batch",
        "accept_p99_ms",
        "small_job_p95_s",
    ):
        target, check = targets.get(key, ("", None))
        met = "" if check is None else ("yes" if check(s[key]) else "NO")
        table.add_row(key, str(s[key]), target, met)
    for phase, cpu in s["cpu_s"].items():
        table.add_row(f"cpu seconds: {phase}", json.dumps(cpu), "", "")
    console.print(table)


if __name__ == "__main__":
    main()
