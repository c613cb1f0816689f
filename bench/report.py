"""The pipeline benches' tables and JSON (table, write_json: bench/gpu/report.py prints the
GPU benches' with them), and the CPU bench's report: the figures of a run, derived from both
sides' raw detail (CPU use, efficiency), and its table, also printed again from a saved JSON
(`--table`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(width=150)


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None
) -> None:
    """A table of `rows`, each cell as text; the first column and `note` left-aligned."""
    out = Table(title=title, caption=caption)
    for i, col in enumerate(columns):
        out.add_column(col, justify="left" if i == 0 or col == "note" else "right")
    for row in rows:
        out.add_row(*(str(cell) for cell in row))
    console.print(out)


def write_json(path: Path, run: dict[str, Any]) -> None:
    """A run's JSON at `path`, its folder made if need be."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1) + "\n")


def met(value: Any, target: str) -> bool | None:
    """Whether `value` meets `target` (">= 1.5", "<= 100", or a bare number it must equal);
    None where it was not measured (None, or NaN: no samples)."""
    if value is None or value != value:
        return None
    op, _, limit = target.rpartition(" ")
    bound = float(limit)
    return bool(value >= bound if op == ">=" else value <= bound if op == "<=" else value == bound)


# The targets docq is held to: the table marks each figure that has one met or not.
TARGETS = {
    "ratio": ">= 1.5",
    "docq_failures": "0",
    "pipeline_efficiency": ">= 0.85",
    "padding_efficiency": ">= 0.90",
    "accept_p99_ms": "<= 100",
    "small_job_p95_s": "<= 2",
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


def summarise(
    documents: int,
    baseline: dict[str, Any],
    docq: dict[str, Any],
    probes: dict[str, Any],
    ceiling: dict[str, Any],
) -> dict[str, Any]:
    """The run's figures, derived from each side's raw detail in the order the table shows
    them, then the CPU seconds of each phase and the detail itself."""
    sides = {"baseline": baseline, "docq": docq, "probes": probes, "ceiling": ceiling}
    padding = ceiling["padding"]
    base_rate = baseline["docs_per_s"]
    accept, small = probes["accept_ms"], probes["small_job_s"]
    return {
        "docq_docs_per_s": docq["docs_per_s"],
        "baseline_docs_per_s": base_rate,
        "baseline_best": {k: baseline[k] for k in ("workers", "threads", "clients")},
        "ratio": round(docq["docs_per_s"] / base_rate, 2) if base_rate else None,
        **cpu_use(documents, baseline, docq),
        "baseline_timeouts": baseline["timeouts"],
        "docq_failures": docq["failures"],
        "ceiling_docs_per_s": ceiling["docs_per_s"],
        **efficiency(docq, ceiling),
        "padding_efficiency": docq["worker_padding_efficiency"],
        "ceiling_padding_efficiency": padding["ceiling_padding_efficiency"],
        "baseline_padding_efficiency": padding["baseline_padding_efficiency"],
        "pad_to_512_efficiency": padding["pad_to_512_efficiency"],
        "worker_windows_per_batch": docq["worker_windows_per_batch"],
        "accept_p99_ms": accept["p99"],
        "accept_n": accept["n"],
        "small_job_p95_s": small["p95"],
        "cpu_s": {name: side["cpu_s"] for name, side in sides.items() if name != "probes"},
        "detail": sides,
    }


def print_table(run: dict[str, Any]) -> None:
    """A run's table, its figures derived again from its detail: a run saved before a
    figure existed (cpu_use) shows it too."""
    figures = summarise(run["documents"], **run["detail"])
    cpu_s = figures.pop("cpu_s")
    del figures["detail"]
    rows, caption = [], None
    for key, value in figures.items():
        target = TARGETS.get(key, "")
        mark = "" if not target else "yes" if met(value, target) else "NO"
        if key == "ratio" and not comparable(figures):
            mark = "unfair"
            caption = (
                "unfair: the two sides had unequal CPU (cores busy differ by more than 15%); "
                "cpu_ratio compares them"
            )
        rows.append((key, json.dumps(value), target, mark))
    rows += [(f"cpu seconds: {phase}", json.dumps(cpu), "", "") for phase, cpu in cpu_s.items()]
    title = f"docq bench: {run['documents']} documents, {run['bench_seconds']} s"
    table(title, ("metric", "value", "target", "met"), rows, caption)
