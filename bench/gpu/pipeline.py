"""The whole docq pipeline on one GPU host, against the old architecture on the same GPU.

Issue 10, part 2. On a CUDA host (the H200 machine: bench/gpu/pack.py, remote.sh) it
starts what `make up` starts, on free ports (devstack/services.py): redis-server,
tritonserver serving a RoBERTa-large-shaped `torch-gpu` classifier (24 layers, 1,024
wide, 16 heads, random weights, FP16; its vocabulary the demo tokenizer's, so real
documents tokenize; laid out by docq's converter as bench/gpu/serve.py does), the API,
the small-job lane's worker and up to `--workers` bulk Celery worker processes. Then, in
this order (each phase is skipped once `--budget-s` would be overrun, and the JSON is
rewritten after each one, so a run cut short keeps what it measured):

1. docq: one upload of `--docs` documents of the bench corpus (corpus.doc_type.generate,
   `--seed`) with every bulk worker running, timed from the upload to `succeeded`
   (bench.pipeline.run_docq), while 3-document jobs go through the small-job lane (upload
   to result; only those that ended before the bulk job did count); docs/s, windows/s,
   the padding the workers' batchers sent (their metrics), GPU utilisation (nvidia-smi
   every 200 ms), CPU seconds per tier (bench.procs.CpuMeter);
2. the ceiling: Triton alone on the same windows, packed by docq's packer with the model's
   batch size and token budget over the whole corpus (bench.pipeline.run_triton_alone),
   `--ceiling-in-flight` requests outstanding;
3. one client uploading the `--long-documents` longest documents in one request, to docq;
4. the old architecture (bench/baseline/app.py: Gunicorn + Uvicorn workers, each holding
   the model in FP32 on the GPU, one synchronous request per document): a sweep over
   `--baseline-workers` on the first `--baseline-documents` documents, each driven by
   bench.pipeline's clients, the GPU memory each worker holds, and the same long upload in
   one request to its bulk call (`--long-timeout`, the client's patience);
5. scaling: the first `--scaling-docs` documents with 12, 8, 4, 2 and 1 bulk workers
   (workers stopped between points), docs/s, GPU utilisation and worker CPU per point.

Prints the tables (rich) and writes `--out`.

    # on the H200 (bench/gpu/RESULTS-pipeline.md has the exact command):
    source bench/gpu/remote.sh && python3 -m bench.gpu.pipeline --out $OUT/pipeline.json
    # rehearsal on a CPU machine (the wheel's CPU tritonserver, a 2-layer model):
    nice -n 10 .venv/bin/python -m bench.gpu.pipeline --tiny --out /tmp/pipeline.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.pipeline import (
    _drive_baseline,
    _submit,
    _wait_job,
    baseline_configs,
    baseline_server,
    percentile,
    run_docq,
    run_triton_alone,
    windows_of,
)
from bench.procs import CpuMeter, find, listener, tree
from corpus.doc_type import LABELS as CORPUS_LABELS
from corpus.doc_type import LabelledDocument, document, generate
from devstack.services import (
    api_server,
    celery_worker,
    free_port,
    redis_server,
    stop,
    triton_server,
)
from devstack.stack import SHARD_THREADS, WORKER_NICE
from docq.catalog import ModelCatalog
from docq.config import REPO_ROOT, Settings
from docq.models import ModelSpec
from docq.store import connection
from docq.store.tenants import Tenants
from docq.text.packing import Batch, pack
from docq.text.tokenizing import load_tokenizer, tokenize, window_spec
from docq.text.windowing import Window, split_all
from workers.inference import TritonInference

DEMO_TOKENIZER = REPO_ROOT / "model_repository" / "doc-type" / "tokenizer"
MODEL = "roberta-large-doc"
TARGETS = {
    "pipeline_efficiency": 0.90,  # docq / Triton alone, at least
    "ratio": 8.0,  # docq / the old architecture's best, at least
    "small_job_p95_s": 1.0,  # 3-document jobs during the bulk job, at most
}
console = Console(width=150)


# --- the corpus ---------------------------------------------------------------------------


def _documents(args: tuple[int, list[tuple[int, str]]]) -> list[LabelledDocument]:
    seed, items = args
    return [document(seed, i, label) for i, label in items]


def generate_parallel(n: int, seed: int, processes: int) -> list[LabelledDocument]:
    """corpus.doc_type.generate(n, seed), document for document, written by `processes`
    processes (20,000 documents take about a minute in one)."""
    if n < 0:
        raise ValueError("n must be >= 0")
    order = [CORPUS_LABELS[i % len(CORPUS_LABELS)] for i in range(n)]
    random.Random(f"docq-labels:{seed}").shuffle(order)  # as generate() deals the labels
    items = list(enumerate(order))
    if processes <= 1 or n < 200:
        return _documents((seed, items))
    step = -(-n // (processes * 4))
    chunks = [(seed, items[i : i + step]) for i in range(0, n, step)]
    with ProcessPoolExecutor(processes) as pool:
        return [d for part in pool.map(_documents, chunks) for d in part]


def window_counts(docs: Sequence[LabelledDocument], tokenizer_dir: Path) -> list[int]:
    """Windows of each document as the workers cut them (512 tokens, stride 64)."""
    tok = load_tokenizer(tokenizer_dir)
    spec = window_spec(tok, 512, 64)
    counts = [0] * len(docs)
    for start in range(0, len(docs), 2000):
        ids = tokenize(tok, [d.text for d in docs[start : start + 2000]])
        for w in split_all(ids, spec):
            counts[start + w.doc] += 1
    return counts


def longest(docs: Sequence[LabelledDocument], counts: Sequence[int], n: int) -> list[int]:
    """Indices of the `n` documents with the most windows (then the longest text)."""
    order = sorted(range(len(docs)), key=lambda i: (-counts[i], -len(docs[i].text), i))
    return sorted(order[:n])


# --- the model ----------------------------------------------------------------------------


def build_model(work: Path, tiny: bool, on_gpu: bool) -> tuple[Path, Path, dict[str, Any]]:
    """A random RoBERTa classifier of bench/gpu/serve.py's shape with the demo tokenizer's
    vocabulary, published as `docq convert --runtime torch-gpu` lays it out (serve.py's
    publish_variant) with the tokenizer beside it; (repository, checkpoint, facts)."""
    import torch
    from google.protobuf import json_format
    from transformers import AutoModelForSequenceClassification

    from bench.gpu import serve

    tok = load_tokenizer(DEMO_TOKENIZER)
    config = serve.roberta_config(tiny)
    # Real documents tokenize: the demo tokenizer's ids index the embeddings, its [PAD] is
    # the padding index RoBERTa derives position ids from.
    config.vocab_size = len(tok)
    config.pad_token_id = tok.pad_token_id
    config.bos_token_id, config.eos_token_id = tok.cls_token_id, tok.sep_token_id
    checkpoint = work / "checkpoint"
    torch.manual_seed(0)
    device = "cuda:0" if on_gpu else "cpu"
    with torch.device(device):
        model = AutoModelForSequenceClassification.from_config(
            config, dtype=torch.float16 if on_gpu else torch.float32
        )
    model.eval().save_pretrained(checkpoint, safe_serialization=True)
    del model
    for f in DEMO_TOKENIZER.iterdir():  # the old service loads its tokenizer from here
        shutil.copy2(f, checkpoint / f.name)
    repo = work / "repo"
    served = serve.publish_variant(repo, checkpoint, serve.Variant(MODEL), on_gpu)
    shutil.copytree(DEMO_TOKENIZER, repo / MODEL / "tokenizer")
    facts = {
        "name": MODEL,
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "heads": config.num_attention_heads,
        "vocab": config.vocab_size,
        "labels": list(serve.LABELS),
        "config": json_format.MessageToDict(served),
        "runtime_sha256": hashlib.sha256(
            (REPO_ROOT / "serving" / "runtimes" / "torch_gpu.py").read_bytes()
        ).hexdigest(),
    }
    return repo, checkpoint, facts


def tree_note() -> str:
    """Which code ran: TREE.txt of a tree packed by bench/gpu/pack.py --tree, else git's
    HEAD and the files changed from it."""
    note = REPO_ROOT / "TREE.txt"
    if note.exists():
        return note.read_text()
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True)
        status = subprocess.run(["git", "status", "--short"], cwd=REPO_ROOT, capture_output=True)
    except OSError:
        return "unknown"
    return f"HEAD {head.stdout.decode()}changed from it:\n{status.stdout.decode()}"


# --- the GPU, read by nvidia-smi -----------------------------------------------------------


def gpu_window(samples: Sequence[tuple[float, float, float]], t0: float, t1: float) -> dict:
    """Utilisation (%) and memory (MiB) of the samples (monotonic time, util, MiB) taken
    between t0 and t1."""
    inside = [(u, m) for t, u, m in samples if t0 <= t <= t1]
    if not inside:
        return {"samples": 0}
    util = [u for u, _ in inside]
    return {
        "samples": len(inside),
        "util_mean": round(sum(util) / len(util), 1),
        "util_p50": round(percentile(util, 50), 1),
        "busy_share": round(sum(1 for u in util if u >= 90) / len(util), 3),
        "memory_max_mib": max(m for _, m in inside),
    }


class GpuSampler:
    """`nvidia-smi` every `interval_ms` in the background: utilisation and memory used.
    (Utilisation is the share of time a kernel ran, not how full the chip was.)"""

    def __init__(self, interval_ms: int = 200) -> None:
        self.interval_ms = interval_ms
        self.samples: list[tuple[float, float, float]] = []
        self.exe = shutil.which("nvidia-smi")
        self._proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        if self.exe is None:
            return
        query = "--query-gpu=utilization.gpu,memory.used"
        cmd = [self.exe, query, "--format=csv,noheader,nounits", f"--loop-ms={self.interval_ms}"]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                util, mem = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.monotonic(), util, mem))

    def window(self, t0: float, t1: float) -> dict:
        return gpu_window(list(self.samples), t0, t1)

    def stop(self) -> None:
        if self._proc is not None:
            stop(self._proc, 5)


def gpu_processes() -> dict[int, float]:
    """MiB of GPU memory each process holds (nvidia-smi's compute apps); {} without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    query = "--query-compute-apps=pid,used_memory"
    out = subprocess.run([exe, query, "--format=csv,noheader,nounits"], capture_output=True)
    held = {}
    for line in out.stdout.decode().splitlines():
        try:
            pid, mib = line.split(",")
            held[int(pid)] = float(mib)
        except ValueError:
            continue
    return held


def gpu_name() -> str:
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "no GPU (CPU rehearsal)"
    query = "--query-gpu=name,driver_version,memory.total"
    out = subprocess.run([exe, query, "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.strip()


# --- the stack ----------------------------------------------------------------------------


class GpuStack:
    """redis, tritonserver, the API, the small-job lane's worker and a changing number of
    bulk workers, each started by devstack/services.py as bench.pipeline.Stack starts them,
    with the attributes run_docq and run_triton_alone read from a Stack (url, headers,
    triton_url, repo, settings, bulk_workers, bulk_ports, workers, triton_pid, meter()).

    Unlike Stack it starts the bulk workers side by side (a dozen, one after the other,
    take a minute), can stop some between runs (the scaling table), and leaves Triton at
    nice 0: on this host Triton feeds a GPU, and 12 busy workers at nice 0 would starve it
    at nice 10 (the local stack nices it so that a shared 2-core box answers requests)."""

    def __init__(self, repo: Path, workdir: Path, shard_size: int) -> None:
        self.repo, self.workdir, self.shard_size = repo, workdir, shard_size
        self._bulk: list[tuple[subprocess.Popen[bytes], int]] = []

    def __enter__(self) -> GpuStack:
        self._stack = ExitStack()
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def _start(self) -> None:
        models = {"DOCQ_MODEL_STARTUP": MODEL, "DOCQ_MODEL_PINNED": MODEL}
        redis_url = self._stack.enter_context(redis_server(self.workdir / "redis"))
        self.redis_pid = listener(int(redis_url.rsplit(":", 1)[1].split("/")[0]))
        self.triton_url = self._stack.enter_context(
            triton_server(self.repo, self.workdir / "triton.log", env={**os.environ, **models})
        )
        port = self.triton_url.rsplit(":", 1)[1]
        self.triton_pid = find("bin/tritonserver", f"--grpc-port={port}")
        self.settings = Settings(
            redis_url=redis_url,
            triton_grpc_url=self.triton_url,
            model_repository=self.repo,
            shard_size=self.shard_size,
            default_model=MODEL,
            model_startup=MODEL,
            model_pinned=MODEL,
        )
        # One tenant with a key of its own, as bench.pipeline.Stack makes it.
        tenants = Tenants(connection.connect(redis_url), secret=self.settings.api_key_secret)
        self.headers = {"Authorization": f"Bearer {tenants.create_key('bench')[1]}"}
        self.env = dict(os.environ)
        for name, value in self.settings.model_dump().items():
            if value is not None:
                self.env[f"DOCQ_{name.upper()}"] = str(value)
        self.priority_port = free_port()
        self.priority = self._stack.enter_context(
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(self.priority_port)},
                self.workdir / "priority.log",
                "cpu-priority",
                "priority",
                SHARD_THREADS,
            )
        )
        os.setpriority(os.PRIO_PROCESS, self.priority.pid, WORKER_NICE)
        self.url = self._stack.enter_context(api_server(self.env, self.workdir / "api.log"))
        self.api_pid = listener(int(self.url.rsplit(":", 1)[1]))

    def add_workers(self, n: int) -> None:
        """Start `n` more bulk workers, side by side."""
        first = len(self._bulk)
        ports = [free_port() for _ in range(n)]
        managers = [
            celery_worker(
                {**self.env, "DOCQ_WORKER_METRICS_PORT": str(port)},
                self.workdir / f"bulk{first + i}.log",
                "cpu",
                f"bulk{first + i}",
                SHARD_THREADS,
            )
            for i, port in enumerate(ports)
        ]
        with ThreadPoolExecutor(max(1, n)) as pool:
            procs = list(pool.map(self._stack.enter_context, managers))
        for proc, port in zip(procs, ports, strict=True):
            os.setpriority(os.PRIO_PROCESS, proc.pid, WORKER_NICE)
            self._bulk.append((proc, port))

    def keep_workers(self, n: int) -> None:
        """Stop bulk workers until `n` run (a stopped worker's shards go to the others)."""
        while len(self._bulk) > n:
            proc, _ = self._bulk.pop()
            stop(proc, 30)

    @property
    def bulk_workers(self) -> int:
        return len(self._bulk)

    @property
    def bulk_ports(self) -> list[int]:
        return [port for _, port in self._bulk]

    @property
    def workers(self) -> list[subprocess.Popen[bytes]]:
        """The bulk workers, then the small-job lane's worker (as Stack lists them)."""
        return [proc for proc, _ in self._bulk] + [self.priority]

    def meter(self) -> CpuMeter:
        roots = {"api": self.api_pid, "triton": self.triton_pid, "redis": self.redis_pid}
        for i, (proc, _) in enumerate(self._bulk):
            roots[f"bulk worker {i}"] = proc.pid
        roots["priority worker"] = self.priority.pid
        return CpuMeter(roots)

    def __exit__(self, *exc: object) -> None:
        self._stack.close()


def triton_stats(url: str, model: str) -> dict[str, Any]:
    """Triton's own counters for `model` so far: requests (windows), executions, and the
    seconds requests waited in its queue and spent in the model (summed over instances)."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        stats = client.get_inference_statistics(model).model_stats
    finally:
        client.close()
    out: dict[str, Any] = {"windows": 0, "executions": 0, "requests": 0}
    out |= {"queue_s": 0.0, "compute_s": 0.0, "rows": {}}
    for m in stats:
        out["windows"] += m.inference_count
        out["executions"] += m.execution_count
        out["requests"] += m.inference_stats.success.count
        out["queue_s"] += m.inference_stats.queue.ns / 1e9
        out["compute_s"] += (
            m.inference_stats.compute_input.ns
            + m.inference_stats.compute_infer.ns
            + m.inference_stats.compute_output.ns
        ) / 1e9
        for b in m.batch_stats:
            out["rows"][str(b.batch_size)] = out["rows"].get(str(b.batch_size), 0) + int(
                b.compute_infer.count
            )
    return out


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What Triton did between two triton_stats() readings, with the mean per request."""
    d: dict[str, Any] = {k: after[k] - before[k] for k in ("windows", "executions", "requests")}
    d["queue_s"] = round(after["queue_s"] - before["queue_s"], 3)
    d["compute_s"] = round(after["compute_s"] - before["compute_s"], 3)
    rows = {k: v - before["rows"].get(k, 0) for k, v in after["rows"].items()}
    d["executions_by_rows"] = {
        k: v for k, v in sorted(rows.items(), key=lambda kv: int(kv[0])) if v
    }
    if d["requests"]:
        d["queue_ms_per_request"] = round(1000 * d["queue_s"] / d["requests"], 2)
        d["compute_ms_per_request"] = round(1000 * d["compute_s"] / d["requests"], 2)
    if d["executions"]:
        d["rows_per_execution"] = round(d["windows"] / d["executions"], 2)
    return d


def tiers(cpu_s: dict[str, float]) -> dict[str, float]:
    """CpuMeter's trees summed by tier: the bulk workers together, the others as they are."""
    out: dict[str, float] = {}
    for name, seconds in cpu_s.items():
        key = "bulk workers" if name.startswith("bulk worker") else name
        out[key] = round(out.get(key, 0.0) + seconds, 2)
    return out


# --- the runs -----------------------------------------------------------------------------


class SmallJobs:
    """3-document jobs, one after the other every `every` seconds, timed from the upload
    to `succeeded`, in a thread of their own while a bulk job runs."""

    def __init__(
        self, url: str, headers: dict[str, str], docs: Sequence[LabelledDocument], every: float
    ) -> None:
        self.url, self.headers, self.docs, self.every = url, headers, docs, every
        self.samples: list[tuple[float, float, str]] = []  # (start, end, status)
        self._running = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._running.set()
        self._thread.start()

    def _loop(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=60) as http:
            i = 0
            while self._running.is_set():
                batch = [self.docs[(i + k) % len(self.docs)] for k in range(3)]
                i += 3
                t = time.monotonic()
                try:
                    job_id, _ = _submit(http, batch)
                    status = _wait_job(http, job_id, 0.02)["status"]
                except httpx.HTTPError as exc:
                    status = f"error: {exc!r}"
                self.samples.append((t, time.monotonic(), status))
                time.sleep(self.every)

    def stop(self) -> None:
        self._running.clear()
        self._thread.join(90)


def small_job_stats(samples: Sequence[tuple[float, float, str]], t0: float, t1: float) -> dict:
    """Upload-to-result seconds of the small jobs that ran wholly between t0 and t1."""
    inside = [(a, b, s) for a, b, s in samples if a >= t0 and b <= t1]
    ok = [b - a for a, b, s in inside if s == "succeeded"]
    return {
        "n": len(ok),
        "not_succeeded": len(inside) - len(ok),
        "p50_s": round(percentile(ok, 50), 3),
        "p95_s": round(percentile(ok, 95), 3),
        "max_s": round(max(ok), 3) if ok else None,
        "samples_s": [round(x, 3) for x in ok],
    }


def started(stack: GpuStack) -> Callable[[], bool]:
    """True once the bulk workers sent a batch more than when this was made."""
    from bench.pipeline import worker_batches

    def sent() -> float:
        return sum(v for k, v in worker_batches(stack.bulk_ports).items() if "batches" in k)

    base = sent()
    return lambda: sent() > base


def run_bulk(
    stack: GpuStack,
    docs: Sequence[LabelledDocument],
    windows: int,
    sampler: GpuSampler,
    small: Sequence[LabelledDocument] | None = None,
    small_every: float = 0.5,
) -> dict[str, Any]:
    """bench.pipeline.run_docq on `docs` with GPU samples, windows/s, CPU per tier and, with
    `small`, 3-document jobs meanwhile (from the first batch the bulk workers send)."""
    probe: SmallJobs | None = None
    watcher: threading.Thread | None = None
    if small:
        probe = SmallJobs(stack.url, stack.headers, small, small_every)
        first_batch = started(stack)

        def start_when_running() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not first_batch():
                time.sleep(0.1)
            probe.start()

        watcher = threading.Thread(target=start_when_running, daemon=True)
        watcher.start()
    held_before = gpu_processes()
    triton_before = triton_stats(stack.triton_url, MODEL)
    t0 = time.monotonic()
    out = run_docq(stack, docs)
    t1 = time.monotonic()
    out["triton"] = stats_delta(triton_before, triton_stats(stack.triton_url, MODEL))
    if probe is not None and watcher is not None:
        watcher.join(5)
        probe.stop()
        out["small_jobs"] = small_job_stats(probe.samples, t0, t1)
    out["workers"] = stack.bulk_workers
    out["windows"] = windows
    out["windows_per_s"] = round(windows / out["elapsed_s"], 1)
    out["gpu"] = sampler.window(t0, t1)
    out["triton_gpu_mib"] = sum(
        mib for pid, mib in held_before.items() if pid in set(tree(stack.triton_pid))
    )
    out["cpu_s"] = out["cpu_s"] | {"tiers": tiers(out["cpu_s"])}
    worker_s = out["cpu_s"]["tiers"].get("bulk workers", 0.0)
    out["worker_cpu_ms_per_doc"] = round(1000 * worker_s / len(docs), 2)
    out["worker_cores_busy"] = round(worker_s / out["elapsed_s"], 2)
    return out


def rebuilt_worker_batches(
    windows: Sequence[Window], spec: ModelSpec, shard_size: int, threads: int = SHARD_THREADS
) -> list[Batch]:
    """The windows packed about as a worker's batcher packs them: the windows of `threads`
    consecutive shards (what one worker process holds at once) sorted and cut together by
    docq's packer with the model's batch size and token budget."""
    group = shard_size * threads
    groups: dict[int, list[Window]] = {}
    for w in windows:
        groups.setdefault(w.doc // group, []).append(w)
    return [b for g in sorted(groups) for b in pack(groups[g], spec.max_batch_size, spec.budget)]


def run_triton_rebuilt(
    stack: GpuStack, docs: Sequence[LabelledDocument], shard_size: int, in_flight: int
) -> dict[str, Any]:
    """Triton alone on the windows in batches rebuilt like the workers' (shards of
    `shard_size`), timed as bench.pipeline.run_triton_alone times its ceiling."""
    catalog = ModelCatalog(stack.triton_url, stack.repo)
    spec = catalog.spec(MODEL)
    catalog.close()
    windows = windows_of(docs, spec)
    batches = rebuilt_worker_batches(windows, spec, shard_size)
    before = triton_stats(stack.triton_url, MODEL)
    triton = TritonInference(stack.triton_url, max_in_flight=in_flight, timeout_s=300)
    t0 = time.perf_counter()
    triton.infer(spec, batches)
    elapsed = time.perf_counter() - t0
    triton.close()
    real = sum(b.real_tokens for b in batches)
    computed = sum(b.computed_tokens for b in batches)
    return {
        "shard_size": shard_size,
        "documents": len(docs),
        "windows": len(windows),
        "batches": len(batches),
        "rows_per_batch": round(len(windows) / len(batches), 2),
        "computed_tokens": computed,
        "padding_efficiency": round(real / computed, 4),
        "in_flight": in_flight,
        "elapsed_s": round(elapsed, 2),
        "docs_per_s": round(len(docs) / elapsed, 3),
        "windows_per_s": round(len(windows) / elapsed, 1),
        "triton": stats_delta(before, triton_stats(stack.triton_url, MODEL)),
    }


def upload_long_docq(stack: GpuStack, docs: Sequence[LabelledDocument]) -> dict[str, Any]:
    """One client uploads `docs` in one request: the answer's latency, then the results."""
    with httpx.Client(base_url=stack.url, headers=stack.headers, timeout=120) as http:
        t = time.monotonic()
        job_id, accept_ms = _submit(http, docs)
        job = _wait_job(http, job_id, 0.1)
        done = time.monotonic() - t
    return {
        "documents": len(docs),
        "answer": f"202 after {accept_ms:.0f} ms",
        "accept_ms": round(accept_ms, 1),
        "status": job["status"],
        "results_after_s": round(done, 2),
        "failed": job["progress"]["documents_failed"],
    }


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


def run_baseline_gpu(
    docs: Sequence[LabelledDocument],
    windows: int,
    long_docs: Sequence[LabelledDocument],
    args: argparse.Namespace,
    workdir: Path,
    sampler: GpuSampler,
    budget: Budget,
) -> dict[str, Any]:
    """The old architecture's sweep on `docs` (bench.pipeline's servers and clients), the
    GPU memory each worker holds, and, on the last point, the long upload in one request."""
    configs = baseline_configs(os.cpu_count() or 1, args.baseline_workers, args.clients_per_worker)
    sweep: list[dict[str, Any]] = []
    long: dict[str, Any] = {}
    for i, config in enumerate(configs):
        last = i == len(configs) - 1
        need = 45 + (args.long_timeout + 5 if last else 0)  # start, run; the long call
        if not budget.allows(need, f"baseline with {config.workers} workers"):
            break
        console.print(f"  baseline {config}: {len(docs)} documents")
        with baseline_server(config, workdir) as (url, gunicorn):
            # Untimed: each worker's first requests (CUDA kernels load, cuBLAS handles).
            asyncio.run(_drive_baseline(url, docs[: config.clients], config.clients, 60.0))
            meter = CpuMeter({"baseline": gunicorn})
            meter.start()
            t0 = time.monotonic()
            point = asyncio.run(_drive_baseline(url, docs, config.clients, 60.0))
            t1 = time.monotonic()
            point |= {"workers": config.workers, "threads": config.threads}
            point |= {"clients": config.clients, "cpu_s": meter.stop()}
            point["windows_per_s"] = round(windows / point["elapsed_s"], 1)
            point["gpu"] = sampler.window(t0, t1)
            # What each worker holds once it has served: its FP32 copy, its CUDA context and
            # what PyTorch's allocator keeps of the activations.
            pids = set(tree(gunicorn))
            held = sorted(mib for pid, mib in gpu_processes().items() if pid in pids)
            point["gpu_mib_per_worker"] = held
            sweep.append(point)
            console.print(f"    {point['docs_per_s']} docs/s, GPU MiB per worker {held}")
            if last and long_docs:
                long = upload_long_baseline(url, long_docs, args.long_timeout)
                console.print(f"    {len(long_docs)} long documents in one request: {long}")
                # The worker still inside the abandoned call would make the master's
                # graceful stop wait for it: end the workers first.
                end_leftovers(set(tree(gunicorn)) - {gunicorn}, "bench.baseline.app")
        # A worker still inside the abandoned bulk call outlives its master's stop and
        # would hold the GPU into the next phase: end what is left of this server.
        end_leftovers(pids, "bench.baseline.app")
    best = max(sweep, key=lambda p: p["docs_per_s"]) if sweep else {}
    return {"sweep": sweep, "best": best, "long_upload": long, "documents": len(docs)}


def run_scaling(
    stack: GpuStack,
    docs: Sequence[LabelledDocument],
    windows: int,
    counts: Sequence[int],
    sampler: GpuSampler,
    budget: Budget,
) -> list[dict[str, Any]]:
    """The same documents with fewer and fewer bulk workers."""
    points: list[dict[str, Any]] = []
    for n in sorted(counts, reverse=True):
        rate = points[-1]["docs_per_s"] * n / points[-1]["workers"] if points else 100.0
        if not budget.allows(15 + len(docs) / max(rate, 1.0), f"scaling point {n} workers"):
            break
        stack.keep_workers(n)
        if stack.bulk_workers < n:
            stack.add_workers(n - stack.bulk_workers)
        point = run_bulk(stack, docs, windows, sampler)
        points.append(point)
        console.print(
            f"  {n} workers: {point['docs_per_s']} docs/s, GPU {point['gpu'].get('util_mean')}%,"
            f" workers {point['worker_cores_busy']} cores"
        )
    return sorted(points, key=lambda p: p["workers"])


def cpu_bound_until(points: Sequence[dict[str, Any]], share: float = 0.9) -> int | None:
    """The fewest workers that reach `share` of the best throughput: below it, adding
    workers (CPU) adds documents/s; from it on, the GPU sets the pace."""
    if not points:
        return None
    best = max(p["docs_per_s"] for p in points)
    return min(p["workers"] for p in points if p["docs_per_s"] >= share * best)


class Budget:
    """The command's time: a phase starts only if what it needs is left."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.skipped: list[str] = []

    def left(self) -> float:
        return self.end - time.monotonic()

    def allows(self, need: float, what: str) -> bool:
        if self.left() >= need:
            return True
        self.skipped.append(f"{what} (needs ~{need:.0f} s, {self.left():.0f} s left)")
        console.print(f"[yellow]skipped: {self.skipped[-1]}[/]")
        return False


# --- the report ---------------------------------------------------------------------------


def summarise(r: dict[str, Any]) -> dict[str, Any]:
    """The headline figures and each target, from the phases that ran."""
    main, ceiling = r.get("docq", {}), r.get("ceiling", {})
    best = r.get("baseline", {}).get("best", {})
    s: dict[str, Any] = {
        "docq_docs_per_s": main.get("docs_per_s"),
        "docq_windows_per_s": main.get("windows_per_s"),
        "docq_failures": main.get("failures"),
        "ceiling_docs_per_s": ceiling.get("docs_per_s"),
        "baseline_best_docs_per_s": best.get("docs_per_s"),
        "baseline_best_workers": best.get("workers"),
        "padding_efficiency": main.get("worker_padding_efficiency"),
        "small_job_p95_s": main.get("small_jobs", {}).get("p95_s"),
        "cpu_bound_until_workers": cpu_bound_until(r.get("scaling", [])),
    }
    if main and ceiling:
        s["pipeline_efficiency"] = round(main["docs_per_s"] / ceiling["docs_per_s"], 3)
        s["work_ratio"] = round(main["computed_tokens"] / ceiling["computed_tokens"], 4)
    if main and best:
        s["ratio"] = round(main["docs_per_s"] / best["docs_per_s"], 2)
    s["targets"] = targets_met(s)
    return s


def targets_met(s: dict[str, Any]) -> dict[str, bool | None]:
    """Each target: met, missed, or None where its phase did not run (or had no samples)."""

    def known(key: str) -> bool:
        value = s.get(key)
        return value is not None and value == value  # NaN: no samples

    efficiency, ratio, small = "pipeline_efficiency", "ratio", "small_job_p95_s"
    return {
        f"{efficiency} >= {TARGETS[efficiency]}": (
            s[efficiency] >= TARGETS[efficiency] if known(efficiency) else None
        ),
        f"{ratio} >= {TARGETS[ratio]} with 0 failures": (
            bool(s[ratio] >= TARGETS[ratio] and s["docq_failures"] == 0) if known(ratio) else None
        ),
        f"{small} <= {TARGETS[small]}": s[small] <= TARGETS[small] if known(small) else None,
    }


def show(r: dict[str, Any]) -> None:
    s = r["summary"]
    head = Table(title=f"docq on {r['gpu']} — {r['date']}")
    for col in ("", "docs/s", "windows/s", "GPU util %", "padding eff.", "failures", "note"):
        head.add_column(col, justify="right" if col not in ("", "note") else "left")
    main, ceiling = r.get("docq", {}), r.get("ceiling", {})
    if main:
        head.add_row(
            f"docq, {main['workers']} bulk workers",
            f"{main['docs_per_s']:.1f}",
            f"{main['windows_per_s']:.0f}",
            str(main["gpu"].get("util_mean")),
            str(main["worker_padding_efficiency"]),
            str(main["failures"]),
            f"{main['documents']} documents in {main['elapsed_s']} s",
        )
    if ceiling:
        head.add_row(
            "Triton alone (ceiling)",
            f"{ceiling['docs_per_s']:.1f}",
            f"{ceiling['windows'] / ceiling['elapsed_s']:.0f}",
            str(ceiling.get("gpu", {}).get("util_mean")),
            str(ceiling["padding"]["ceiling_padding_efficiency"]),
            "",
            f"{ceiling['batches']} batches, {ceiling['in_flight']} in flight",
        )
    for p in r.get("baseline", {}).get("sweep", []):
        head.add_row(
            f"old architecture, {p['workers']} workers",
            f"{p['docs_per_s']:.2f}",
            f"{p['windows_per_s']:.0f}",
            str(p["gpu"].get("util_mean")),
            str(r.get("padding", {}).get("baseline_padding_efficiency", "")),
            f"{p['timeouts'] + p['errors']}",
            f"p95 {p['latency_p95_s']} s, GPU MiB/worker {p['gpu_mib_per_worker']}",
        )
    console.print(head)
    scale = Table(title="scaling: bulk worker processes (threads 4 each) on one GPU")
    for col in (
        "workers",
        "docs",
        "docs/s",
        "windows/s",
        "x per doubling",
        "GPU util %",
        "worker cores busy",
        "worker CPU ms/doc",
        "padding eff.",
    ):
        scale.add_column(col, justify="right")
    prev = None
    for p in r.get("scaling", []):
        gain = f"{p['docs_per_s'] / prev:.2f}" if prev else ""
        prev = p["docs_per_s"]
        scale.add_row(
            str(p["workers"]),
            str(p["documents"]),
            f"{p['docs_per_s']:.1f}",
            f"{p['windows_per_s']:.0f}",
            gain,
            str(p["gpu"].get("util_mean")),
            str(p["worker_cores_busy"]),
            str(p["worker_cpu_ms_per_doc"]),
            str(p["worker_padding_efficiency"]),
        )
    console.print(scale)
    for who in ("docq", "baseline"):
        long = r.get("long_upload", {}).get(who)
        if long:
            console.print(f"{long['documents']} long documents in one request, {who}: {long}")
    for who, run in (("docq", main), ("Triton alone", ceiling)):
        if run.get("triton"):
            t = {k: v for k, v in run["triton"].items() if k != "executions_by_rows"}
            console.print(f"Triton's counters, {who}: {t}")
    if main:
        console.print(
            f"small jobs during the bulk job: {main.get('small_jobs', {}) | {'samples_s': '...'}}"
        )
        console.print(f"CPU seconds per tier (docq): {main['cpu_s']['tiers']}")
    console.print(f"summary: {json.dumps({k: v for k, v in s.items() if k != 'targets'})}")
    for name, met in s["targets"].items():
        console.print(f"target {name}: {'not run' if met is None else 'MET' if met else 'MISSED'}")
    for what in r.get("skipped", []):
        console.print(f"[yellow]not run: {what}[/]")


# --- the run ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    ap.add_argument("--tiny", action="store_true", help="CPU rehearsal: 2-layer model, few docs")
    ap.add_argument("--docs", type=int, default=None, help="bulk job (default 20000; tiny 300)")
    ap.add_argument("--seed", type=int, default=777)
    ap.add_argument("--workers", type=ints, default=None, help="default 1,2,4,8,12 (tiny 1,2)")
    ap.add_argument("--scaling-docs", type=int, default=None, help="default 2500 (tiny 120)")
    ap.add_argument("--shard-size", type=int, default=64)
    ap.add_argument("--small-every", type=float, default=0.5, help="s between small jobs")
    ap.add_argument("--ceiling-in-flight", type=int, default=0, help="0: twice the workers'")
    ap.add_argument(
        "--rebuilt-shards",
        type=ints,
        default=None,
        help="shard sizes to rebuild the workers' batches for, Triton alone (default: ours)",
    )
    ap.add_argument("--long-documents", type=int, default=None, help="default 1000 (tiny 40)")
    ap.add_argument("--long-timeout", type=float, default=60.0)
    ap.add_argument("--baseline-workers", type=ints, default=None, help="default 1,2,4,8")
    ap.add_argument("--baseline-documents", type=int, default=None, help="default 400 (tiny 40)")
    ap.add_argument("--clients-per-worker", type=int, default=4)
    ap.add_argument("--skip", action="append", default=[], choices=["baseline", "scaling"])
    ap.add_argument("--budget-s", type=float, default=540, help="stop starting phases after")
    args = ap.parse_args(argv)
    tiny = args.tiny
    defaults = {
        "docs": 300 if tiny else 20_000,
        "workers": [1, 2] if tiny else [1, 2, 4, 8, 12],
        "scaling_docs": 120 if tiny else 2500,
        "long_documents": 40 if tiny else 1000,
        "baseline_workers": [1, 2] if tiny else [1, 2, 4, 8],
        "baseline_documents": 40 if tiny else 400,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    budget = Budget(args.budget_s)
    import torch

    on_gpu = torch.cuda.is_available()
    work = Path(tempfile.mkdtemp(prefix="docq-gpu-pipeline-"))
    r: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": "python3 -m bench.gpu.pipeline " + " ".join(argv or sys.argv[1:]),
        "gpu": gpu_name(),
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "tree": tree_note(),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "skipped": budget.skipped,
        "errors": [],
    }

    def save() -> None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        r["summary"] = summarise(r)
        args.out.write_text(json.dumps(r, indent=1) + "\n")

    def phase(name: str, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        """Run one phase; on an error or past `timeout` (a job that never ends: run_docq
        waits for ever) record it and go on with the next (the thread is left behind)."""
        t = time.monotonic()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn()
            except Exception as exc:  # the next phases still run; the JSON says what broke
                box["error"] = exc
                box["trace"] = traceback.format_exc()[-3000:]

        worker = threading.Thread(target=run, name=f"phase {name}", daemon=True)
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            box["error"] = TimeoutError(f"{name} still running after {timeout:.0f} s")
            box["trace"] = repr(box["error"])
        if "error" in box:
            console.print(f"[red]{name} failed: {box['error']!r}[/]")
            r["errors"].append({"phase": name, "error": box["trace"]})
        value = box.get("value")
        r.setdefault("phase_s", {})[name] = round(time.monotonic() - t, 1)
        save()
        return value

    console.print(f"[bold]docq GPU pipeline[/]: {r['gpu']}, work in {work}")
    with ProcessPoolExecutor(1) as corpus_pool:
        # The corpus is written by other processes while the model is built.
        docs_future = corpus_pool.submit(
            generate_parallel, args.docs, args.seed, max(1, (os.cpu_count() or 2) - 2)
        )
        t = time.monotonic()
        repo, checkpoint, r["model"] = build_model(work, args.tiny, on_gpu)
        r["model"]["build_s"] = round(time.monotonic() - t, 1)
        docs = docs_future.result()
    small = [d for d in generate(300, args.seed + 1) if len(d.text) < 1500]
    counts = window_counts(docs, DEMO_TOKENIZER)
    long_docs = [docs[i] for i in longest(docs, counts, args.long_documents)]
    r["corpus"] = {
        "documents": len(docs),
        "windows": sum(counts),
        "windows_per_doc": round(sum(counts) / len(docs), 3),
        "mean_chars": round(sum(len(d.text) for d in docs) / len(docs)),
        "long_upload_windows": sum(counts[i] for i in longest(docs, counts, args.long_documents)),
        "ready_after_s": round(args.budget_s - budget.left(), 1),
    }
    console.print(f"corpus and model ready: {r['corpus']}, model {r['model']['build_s']} s")
    sampler = GpuSampler()
    sampler.start()
    try:
        with GpuStack(repo, work, args.shard_size) as stack:
            stack.add_workers(max(args.workers))
            r["stack_ready_after_s"] = round(args.budget_s - budget.left(), 1)
            console.print(
                f"stack up with {stack.bulk_workers} bulk workers: {r['stack_ready_after_s']} s"
            )
            warm = docs[-min(len(docs), 2 * args.shard_size * stack.bulk_workers) :]
            phase("warm-up", lambda: run_docq(stack, warm), timeout=90)

            def bulk() -> dict[str, Any]:
                out = run_bulk(stack, docs, sum(counts), sampler, small, args.small_every)
                console.print(f"docq: {out['docs_per_s']} docs/s, {out['windows_per_s']} windows/s")
                return out

            r["docq"] = phase("docq", bulk, timeout=max(240.0, len(docs) / 50)) or {}

            def ceiling() -> dict[str, Any]:
                before = triton_stats(stack.triton_url, MODEL)
                out = run_triton_alone(stack, docs, MODEL, args.ceiling_in_flight or None)
                end = time.monotonic()  # its clock runs from the first request to the last
                out["triton"] = stats_delta(before, triton_stats(stack.triton_url, MODEL))
                out["gpu"] = sampler.window(end - out["elapsed_s"], end)
                console.print(f"Triton alone: {out['docs_per_s']} docs/s")
                return out

            if budget.allows(30 + 1.5 * r["docq"].get("elapsed_s", 30), "ceiling"):
                r["ceiling"] = phase("ceiling", ceiling, timeout=180) or {}
                r["padding"] = r["ceiling"].get("padding", {})
            r["rebuilt"] = []
            for shard in args.rebuilt_shards or [args.shard_size]:
                if budget.allows(45, f"Triton alone on worker-like batches of {shard}-doc shards"):
                    in_flight = args.ceiling_in_flight or 2 * stack.bulk_workers * 4
                    got = phase(
                        f"rebuilt {shard}",
                        lambda shard=shard, n=in_flight: run_triton_rebuilt(stack, docs, shard, n),
                        timeout=180,
                    )
                    if got:
                        r["rebuilt"].append(got)
                        console.print(f"Triton alone, worker-like batches ({shard}): {got}")
            r["long_upload"] = {}
            if budget.allows(30, "long upload to docq"):
                r["long_upload"]["docq"] = phase(
                    "long upload, docq", lambda: upload_long_docq(stack, long_docs), timeout=120
                )
                console.print(f"docq long upload: {r['long_upload']['docq']}")
            if "baseline" not in args.skip:
                os.environ["BASELINE_CHECKPOINT"] = str(checkpoint)  # read by bench/baseline/app.py
                os.environ["BASELINE_DEVICE"] = "cuda" if on_gpu else "cpu"
                base_docs = docs[: args.baseline_documents]

                def baseline() -> dict[str, Any]:
                    out = run_baseline_gpu(
                        base_docs,
                        sum(counts[: len(base_docs)]),
                        long_docs,
                        args,
                        work,
                        sampler,
                        budget,
                    )
                    r["long_upload"]["baseline"] = out.pop("long_upload")
                    return out

                r["baseline"] = phase("baseline", baseline) or {}
            if "scaling" not in args.skip:
                sub = docs[: args.scaling_docs]
                r["scaling"] = (
                    phase(
                        "scaling",
                        lambda: run_scaling(
                            stack, sub, sum(counts[: len(sub)]), args.workers, sampler, budget
                        ),
                    )
                    or []
                )
    finally:
        sampler.stop()
        save()
    show(r)
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
