"""The CPU bench's report: the summary of a run, the figures derived from both sides (CPU
use, efficiency), and its table, also printed again from a saved JSON (`--table`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from corpus.doc_type import LabelledDocument

console = Console()


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
