"""What the benches measure besides the clock: CPU time of process trees, read from /proc
(how much CPU each tier of a stack used), percentiles, and the workers' batcher counters
(their metrics endpoints); and the cores a bench and every process it starts may run on."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import httpx
import numpy as np
from prometheus_client.parser import text_string_to_metric_families

TICK = os.sysconf("SC_CLK_TCK")


def use_cores(cores: int) -> list[int]:
    """Pin this process (and every process it starts) to its first `cores` CPUs."""
    available = sorted(os.sched_getaffinity(0))
    if not 1 <= cores <= len(available):
        raise ValueError(f"--cores must be between 1 and {len(available)}, not {cores}")
    chosen = available[:cores]
    os.sched_setaffinity(0, chosen)
    return chosen


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process itself) or None if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def tree(root: int) -> list[int]:
    """The pid and all its descendants alive now."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = st[0]
    out, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, ppid in parents.items() if ppid in frontier]
        out += frontier
    return out


class CpuMeter:
    """CPU seconds used by named process trees between start() and stop()."""

    def __init__(self, roots: dict[str, int]) -> None:
        self.roots = roots
        self._start: dict[str, dict[int, float]] = {}

    def _sample(self) -> dict[str, dict[int, float]]:
        out: dict[str, dict[int, float]] = {}
        for name, root in self.roots.items():
            out[name] = {}
            for pid in tree(root):
                if (st := _stat(pid)) is not None:
                    out[name][pid] = st[1]
        return out

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
    """The pid of the process listening on TCP `port` (IPv4 or IPv6), read from /proc."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                inodes.add(f"socket:[{fields[9]}]")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in inodes:
                    return int(entry.name)
            except OSError:
                continue
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
