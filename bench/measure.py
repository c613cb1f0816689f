"""What the CPU bench measures besides the clock: percentiles, the workers' batcher counters
(their metrics endpoints), and py-spy profiles of a worker and Triton's model stub. CPU
seconds per process tree are bench/procs.py's."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

from bench.procs import find
from docq.config import REPO_ROOT

if TYPE_CHECKING:
    from bench.stack import Stack

RESULTS = REPO_ROOT / "bench" / "results"


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


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
