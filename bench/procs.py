"""What the benches measure besides the clock: CPU time of process trees, read through
psutil (how much CPU each tier of a stack used), percentiles, and the workers' batcher counters
(their metrics endpoints); and the cores a bench and every process it starts may run on."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

import httpx
import numpy as np
import psutil
from prometheus_client.parser import text_string_to_metric_families


def use_cores(cores: int) -> list[int]:
    """Pin this process (and every process it starts) to its first `cores` CPUs."""
    available = sorted(os.sched_getaffinity(0))
    if not 1 <= cores <= len(available):
        raise ValueError(f"--cores must be between 1 and {len(available)}, not {cores}")
    chosen = available[:cores]
    os.sched_setaffinity(0, chosen)
    return chosen


def tree(root: int) -> list[int]:
    """The pid and all its descendants alive now."""
    try:
        return [root, *(p.pid for p in psutil.Process(root).children(recursive=True))]
    except psutil.NoSuchProcess:
        return [root]


def _cpu_s(pids: list[int]) -> dict[int, float]:
    """{pid: CPU seconds of the process itself, user and system}, of those still alive."""
    out = {}
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = psutil.Process(pid).cpu_times()
            out[pid] = times.user + times.system
    return out


class CpuMeter:
    """CPU seconds used by named process trees between start() and stop()."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = roots
        self._start: dict[str, dict[int, float]] = {}

    def _sample(self) -> dict[str, dict[int, float]]:
        return {name: _cpu_s(tree(root)) for name, root in self.roots.items()}

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> dict[str, float]:
        """CPU seconds per tree (processes born during the window count from zero)."""
        end = self._sample()
        return {
            name: round(
                sum(t - self._start.get(name, {}).get(pid, 0.0) for pid, t in pids.items()), 2
            )
            for name, pids in end.items()
        }


def listener(port: int) -> int:
    """The pid of the process listening on TCP `port` (IPv4 or IPv6)."""
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return conn.pid
    raise LookupError(f"no process listens on port {port}")


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
