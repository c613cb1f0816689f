"""The GPU bench's report: the summary and its targets from the phases that ran, the
tables, and which code ran."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from rich.console import Console
from rich.table import Table

from docq.config import REPO_ROOT

TARGETS = {
    "pipeline_efficiency": 0.90,  # docq / Triton alone, at least
    # docq / the old architecture's best, per window, at least: against FP16 where it ran
    # (issue 40: the architecture's gain, not precision's), else FP32
    "ratio": 8.0,
    "small_job_p95_s": 1.0,  # 3-document jobs during the bulk job, at most
}
console = Console(width=150)


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


def summarise(r: dict[str, Any]) -> dict[str, Any]:
    """The headline figures and each target, from the phases that ran."""
    main, ceiling = r.get("docq", {}), r.get("ceiling", {})
    base = r.get("baseline", {})
    s: dict[str, Any] = {
        "docq_docs_per_s": main.get("docs_per_s"),
        "docq_windows_per_s": main.get("windows_per_s"),
        "docq_failures": main.get("failures"),
        "ceiling_docs_per_s": ceiling.get("docs_per_s"),
        "padding_efficiency": main.get("worker_padding_efficiency"),
        "small_job_p95_s": main.get("small_jobs", {}).get("p95_s"),
    }
    if scans := r.get("scans"):  # bench/gpu/scans.py: OCR'd pages through the whole pipeline
        s["scans_docs_per_s"] = scans.get("docs_per_s")
        s["scans_pages_per_core_s"] = scans.get("pages_per_core_s")
        s["extraction_cores_needed"] = scans.get("cores_needed")
        s["extraction_cores_needed_by_gpu_time"] = scans.get("cores_needed_by_gpu_time")
    if main and ceiling:
        s["pipeline_efficiency"] = round(main["docs_per_s"] / ceiling["docs_per_s"], 3)
        s["work_ratio"] = round(main["computed_tokens"] / ceiling["computed_tokens"], 4)
    if base.get("documents") and "windows" in base:
        s["baseline_windows_per_doc"] = round(base["windows"] / base["documents"], 3)
    for precision in ("fp32", "fp16"):  # each precision's best worker count, same run
        best = base.get(precision, {}).get("best", {})
        if not best:
            continue
        s[f"baseline_{precision}_best"] = {
            k: best.get(k) for k in ("workers", "docs_per_s", "windows_per_s")
        }
        if main:
            s[f"ratio_{precision}_per_doc"] = round(main["docs_per_s"] / best["docs_per_s"], 2)
            per_window = round(main["windows_per_s"] / best["windows_per_s"], 2)
            s[f"ratio_{precision}_per_window"] = s["ratio"] = per_window
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
    for p in [
        p for x in ("fp32", "fp16") for p in r.get("baseline", {}).get(x, {}).get("sweep", [])
    ]:
        head.add_row(
            f"old architecture {p['precision'].upper()}, {p['workers']} workers",
            f"{p['docs_per_s']:.2f}",
            f"{p['windows_per_s']:.0f}",
            str(p["gpu"].get("util_mean")),
            str(r.get("padding", {}).get("baseline_padding_efficiency", "")),
            f"{p['timeouts'] + p['errors']}",
            f"p95 {p['latency_p95_s']} s, GPU MiB/worker {p['gpu_mib_per_worker']}",
        )
    console.print(head)
    if scans := r.get("scans"):
        console.print(
            f"scans: {scans.get('documents')} documents, {scans.get('pages')} pages in "
            f"{scans.get('elapsed_s')} s ({scans.get('docs_per_s')} docs/s), extract CPU "
            f"{scans.get('extract_cpu_s_per_page')} s/page, GPU {scans.get('gpu', {})}; "
            f"{scans.get('cores_needed')} extraction cores would keep the GPU busy at "
            f"{scans.get('gpu_windows_per_s')} windows/s ({scans.get('gpu_capacity_from')}), "
            f"{scans.get('cores_needed_by_gpu_time')} by the GPU time its pages took"
        )
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
