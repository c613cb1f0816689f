"""The pipeline benches' report: tables and JSON (table, write_json, which the other tools
print and write theirs with), and for the CPU and the GPU bench the figures of a run,
derived from its raw detail, the targets each is held to, and its tables (a saved CPU run's
printed again by `--table`)."""

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


# --- the GPU pipeline bench -----------------------------------------------------------------

GPU_TARGETS = {
    "pipeline_efficiency": ">= 0.9",  # docq / Triton alone
    # docq / the old architecture's best, per window, with 0 failures: against FP16 where it
    # ran (issue 40: the architecture's gain, not precision's), else FP32
    "ratio": ">= 8.0",
    "small_job_p95_s": "<= 1.0",  # 3-document jobs during the bulk job
}


def summarise_gpu(r: dict[str, Any]) -> dict[str, Any]:
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
    if main and ceiling:
        s |= efficiency(main, ceiling)
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
    out: dict[str, bool | None] = {}
    for figure, target in GPU_TARGETS.items():
        ok = met(s.get(figure), target)
        if figure == "ratio":  # a ratio over failed documents is no gain
            target, ok = f"{target} with 0 failures", ok and s["docq_failures"] == 0
        out[f"{figure} {target}"] = ok
    return out


def show_gpu(r: dict[str, Any]) -> None:
    """A GPU pipeline run's tables: a row per side and sweep point, then its figures."""
    s = r["summary"]
    main, ceiling = r.get("docq", {}), r.get("ceiling", {})
    rows = []
    if main:
        rows.append((
            f"docq, {main['workers']} bulk workers", f"{main['docs_per_s']:.1f}",
            f"{main['windows_per_s']:.0f}", main["gpu"].get("util_mean"),
            main["worker_padding_efficiency"], main["failures"],
            f"{main['documents']} documents in {main['elapsed_s']} s",
        ))  # fmt: skip
    if ceiling:
        rows.append((
            "Triton alone (ceiling)", f"{ceiling['docs_per_s']:.1f}",
            f"{ceiling['windows'] / ceiling['elapsed_s']:.0f}",
            ceiling.get("gpu", {}).get("util_mean"),
            ceiling["padding"]["ceiling_padding_efficiency"], "",
            f"{ceiling['batches']} batches, {ceiling['in_flight']} in flight",
        ))  # fmt: skip
    for x in ("fp32", "fp16"):
        for p in r.get("baseline", {}).get(x, {}).get("sweep", []):
            rows.append((
                f"old architecture {p['precision'].upper()}, {p['workers']} workers",
                f"{p['docs_per_s']:.2f}", f"{p['windows_per_s']:.0f}",
                p["gpu"].get("util_mean"),
                r.get("padding", {}).get("baseline_padding_efficiency", ""),
                p["timeouts"] + p["errors"],
                f"p95 {p['latency_p95_s']} s, GPU MiB/worker {p['gpu_mib_per_worker']}",
            ))  # fmt: skip
    columns = ("", "docs/s", "windows/s", "GPU util %", "padding eff.", "failures", "note")
    table(f"docq on {r['gpu']} — {r['date']}", columns, rows)
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
    for name, ok in s["targets"].items():
        console.print(f"target {name}: {'not run' if ok is None else 'MET' if ok else 'MISSED'}")
    for what in r.get("skipped", []):
        console.print(f"[yellow]not run: {what}[/]")
