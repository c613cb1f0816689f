"""The serve bench's requests and its clients of tritonserver, over gRPC.

The requests: their shapes (rows of windows) and random windows of token ids of a shape.
The clients: one request at a time, and a sweep of requests in flight from a pool of client
processes (each with threads, each thread one request at a time). The served logits' parity
is the parity gate's (bench/gpu/parity.py): 10,000 documents at every request size."""

from __future__ import annotations

import functools
import multiprocessing as mp
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from bench.gpu.model import LABELS, VOCAB

Shape = tuple[int, int, float]  # rows, tokens, the last row's share of real tokens

# (7, 512, 0.6) is real traffic, a document's windows with its short last one (key "7x512p");
# every other row is full.
SHAPES: list[Shape] = [(1, 512, 1.0), (2, 512, 1.0), (7, 512, 1.0), (7, 512, 0.6)]


def key(shape: Shape) -> str:
    rows, length, last = shape
    return f"{rows}x{length}" + ("p" if last < 1 else "")


def real_tokens(shape: Shape) -> int:
    rows, length, last = shape
    return (rows - 1) * length + int(length * last)


def windows(rows: int, length: int, seed: int, last: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Full windows (every token real), as long documents give them; with `last` < 1 the
    last row holds that share of real tokens, then padding (id 1, mask 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, VOCAB, (rows, length), dtype=np.int64)
    ids[:, 0] = 0  # <s>
    mask = np.ones((rows, length), dtype=np.int64)
    if last < 1:
        mask[-1, int(length * last) :] = 0
        ids[-1, int(length * last) :] = 1  # RoBERTa's <pad>
    return ids, mask


@functools.cache
def _client(url: str, slot: int) -> Any:
    """This process's gRPC client number `slot` of `url`, made on first use (after spawn)."""
    import tritonclient.grpc as grpcclient

    return grpcclient.InferenceServerClient(url)


def _inputs(rows: int, length: int, last: float, seed: int) -> list[Any]:
    """The gRPC inputs of one request of windows(rows, length, seed, last)."""
    import tritonclient.grpc as grpcclient

    arrays = zip(("input_ids", "attention_mask"), windows(rows, length, seed, last), strict=True)
    return [
        grpcclient.InferInput(name, list(a.shape), "INT64").set_data_from_numpy(a)
        for name, a in arrays
    ]


def load_task(
    task: tuple[str, str, int, int, float, int, float, float, float],
) -> list[float]:
    """Run `threads` request loops from `start_at` (wall clock) for warm + seconds; the
    latencies (ms) of the requests that ended inside the measured window."""
    url, model, rows, length, last, threads, start_at, warm, seconds = task
    latencies: list[float] = []

    def loop(slot: int) -> None:
        client = _client(url, slot)
        inputs = _inputs(rows, length, last, slot)
        time.sleep(max(0.0, start_at - time.time()))
        begin, end = start_at + warm, start_at + warm + seconds
        while (t := time.time()) < end:
            client.infer(model, inputs)
            done = time.time()
            if begin <= done < end:
                latencies.append((done - t) * 1000)

    with ThreadPoolExecutor(threads) as pool:
        for running in [pool.submit(loop, slot) for slot in range(threads)]:
            running.result()  # a loop's error, raised here for the parent
    return latencies


class Load:
    """A pool of client processes (spawned: gRPC does not survive fork), each level of a
    sweep measured for `seconds` after `warm`."""

    def __init__(self, processes: int, warm: float, seconds: float) -> None:
        self.processes, self.warm, self.seconds = processes, warm, seconds
        self.pool = mp.get_context("spawn").Pool(processes)

    def run(self, url: str, model: str, shape: Shape, in_flight: int) -> dict[str, Any]:
        procs = min(self.processes, in_flight)
        per = [in_flight // procs + (1 if i < in_flight % procs else 0) for i in range(procs)]
        start_at = time.time() + 0.3
        tasks = [(url, model, *shape, n, start_at, self.warm, self.seconds) for n in per]
        latencies = [ms for part in self.pool.map(load_task, tasks) for ms in part]
        return {
            "in_flight": in_flight,
            "requests": len(latencies),
            "seq_s": round(len(latencies) * shape[0] / self.seconds, 1),
            "tokens_s": round(len(latencies) * real_tokens(shape) / self.seconds),
            "p50_ms": round(statistics.median(latencies), 3) if latencies else None,
            "p95_ms": round(float(np.percentile(latencies, 95)), 3) if latencies else None,
        }

    def sweep(
        self, url: str, model: str, shape: Shape, levels: list[int], early_stop: bool
    ) -> list[dict[str, Any]]:
        """seq/s at each number of requests in flight; with `early_stop`, until a level
        gains less than 3% over the best before it (from the fourth level on)."""
        points: list[dict[str, Any]] = []
        for level in levels:
            points.append(self.run(url, model, shape, level))
            print(f"  {model} {shape} x{level}: {points[-1]}", flush=True)
            best = max(p["seq_s"] for p in points[:-1]) if len(points) > 1 else 0.0
            if early_stop and len(points) >= 4 and points[-1]["seq_s"] < 1.03 * best:
                break
        return points


def time_calls(call: Any, sync: Any, repeat: int, warm: int = 3, warm_s: float = 0) -> dict:
    """p50, p95 and samples (ms) of `repeat` calls, after `warm` calls and `warm_s` seconds."""
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
        "p95_ms": round(float(np.percentile(times, 95)), 3),
        "samples_ms": [round(x, 3) for x in times],
    }


def one_at_a_time(url: str, model: str, shape: Shape, n: int) -> dict[str, Any]:
    """p50/p95 of `n` requests of `shape`, one after the other, after a checked first answer
    and ten unmeasured ones."""
    client = _client(url, 10_000)
    inputs = _inputs(*shape, seed=1)
    logits = client.infer(model, inputs).as_numpy("logits")
    if logits is None or logits.shape != (shape[0], len(LABELS)) or not np.isfinite(logits).all():
        raise RuntimeError(f"{model} answered {shape} with logits {logits!r}")
    return time_calls(lambda: client.infer(model, inputs), lambda: None, n, warm=10)
