"""What the GPU bench measures besides docs/s: the GPU through nvidia-smi, Triton's own
counters, CPU seconds per tier, and the command's time budget."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections import Counter
from typing import Any

from bench.procs import percentile
from bench.report import console
from devstack.services import stop


class GpuSampler:
    """`nvidia-smi` every `interval_ms` in the background: utilisation and memory used.
    (Utilisation is the share of time a kernel ran, not how full the chip was.)"""

    def __init__(self, interval_ms: int = 200) -> None:
        self.interval_ms = interval_ms
        self.samples: list[tuple[float, float, float]] = []  # (monotonic time, util, MiB)
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
            with contextlib.suppress(ValueError):  # a line nvidia-smi could not fill
                util, mem = (float(x) for x in line.split(","))
                self.samples.append((time.monotonic(), util, mem))

    def window(self, t0: float, t1: float) -> dict:
        """Utilisation (%) and memory (MiB) of the samples taken between t0 and t1."""
        inside = [(u, m) for t, u, m in list(self.samples) if t0 <= t <= t1]
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

    def stop(self) -> None:
        if self._proc is not None:
            stop(self._proc, 5)


def _smi(query: str, form: str = "csv,noheader,nounits") -> list[str]:
    """nvidia-smi's lines for `query`; [] without one."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return []
    out = subprocess.run([exe, query, f"--format={form}"], capture_output=True)
    return out.stdout.decode().splitlines()


def gpu_processes() -> dict[int, float]:
    """MiB of GPU memory each process holds (nvidia-smi's compute apps); {} without one."""
    held = {}
    for line in _smi("--query-compute-apps=pid,used_memory"):
        with contextlib.suppress(ValueError):
            pid, mib = line.split(",")
            held[int(pid)] = float(mib)
    return held


def gpu_name() -> str:
    lines = _smi("--query-gpu=name,driver_version,memory.total", "csv,noheader")
    return "\n".join(lines).strip() if lines else "no GPU (CPU rehearsal)"


def triton_stats(url: str, model: str) -> dict[str, Any]:
    """Triton's own counters for `model` so far (summed over its versions): requests,
    windows, executions, and executions by their number of rows."""
    import tritonclient.grpc as grpcclient

    with grpcclient.InferenceServerClient(url) as client:
        stats = client.get_inference_statistics(model).model_stats
    rows: Counter[str] = Counter()
    for m in stats:
        for b in m.batch_stats:
            rows[str(b.batch_size)] += b.compute_infer.count
    return {
        "windows": sum(m.inference_count for m in stats),
        "executions": sum(m.execution_count for m in stats),
        "requests": sum(m.inference_stats.success.count for m in stats),
        "rows": dict(rows),
    }


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What Triton did between two triton_stats() readings."""
    d: dict[str, Any] = {k: after[k] - before[k] for k in ("windows", "executions", "requests")}
    grown = Counter(after["rows"]) - Counter(before["rows"])  # the row counts that ran
    d["executions_by_rows"] = dict(sorted(grown.items(), key=lambda kv: int(kv[0])))
    if d["executions"]:
        d["rows_per_execution"] = round(d["windows"] / d["executions"], 2)
    return d


def tiers(cpu_s: dict[str, float]) -> dict[str, float]:
    """CpuMeter's trees summed by tier: the bulk workers together, the others as they are
    (the GPU bench starts no extract workers)."""
    out: dict[str, float] = {}
    for name, seconds in cpu_s.items():
        tier = "bulk workers" if name.startswith("bulk worker") else name
        out[tier] = round(out.get(tier, 0.0) + seconds, 2)
    return out


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
