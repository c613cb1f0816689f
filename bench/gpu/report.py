"""The GPU serve bench's report (one row per shape, served against the old runtime, with the
in-process reference set beside it, and its targets), and which code a GPU run ran. The GPU
pipeline bench's report is the CPU bench's module, bench/report.py."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from bench.gpu.clients import SHAPES, key
from bench.report import console, met, table
from devstack.carry import pack
from docq.config import REPO_ROOT

SERVE_TARGETS = {
    "p50_ms_1x512": "<= 2.5",  # (1,512) one at a time, p50
    "seq_s_7x512": ">= 1600",  # (7,512) saturated
    "ratio_2x512": ">= 14",  # (2,512) saturated over the old runtime
    # (7,512) with a 60%-long last row: tokens/s over full rows' (no padding cost)
    "tokens_7x512p_over_full": ">= 1.0",
}


def tree_note() -> str:
    """Which code ran: TREE.txt of a tree packed by devstack/carry/pack.py --tree (it travels
    without .git), else git's HEAD and the files changed from it."""
    note = REPO_ROOT / "TREE.txt"
    return note.read_text() if note.exists() else pack.tree_note()


def serve_table(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per shape: served p50/p95, saturated seq/s, the old runtime, the ratio."""
    default = next(v["name"] for v in result["variants"] if v["name"] in result["served"])
    served = result["served"][default]  # the first variant that loaded (the sweep's)
    rows_out = []
    for shape in SHAPES:
        name = key(shape)
        s, old = served[name], result["old_runtime"].get(key((*shape[:2], 1.0)))
        best = max(s["sweep"], key=lambda p: p["seq_s"])
        rows_out.append(
            {
                "shape": name,
                "p50_ms": s["one_at_a_time"]["p50_ms"],
                "p95_ms": s["one_at_a_time"]["p95_ms"],
                "seq_s": best["seq_s"],
                "tokens_s": best.get("tokens_s"),
                "in_flight": best["in_flight"],
                "old_p50_ms": old["p50_ms"],
                "old_seq_s": old["seq_s"],
                "ratio": round(best["seq_s"] / old["seq_s"], 2),
            }
        )
    return rows_out


def against_references(table: list[dict[str, Any]], refs: dict[str, Any]) -> dict[str, Any]:
    """The served default against each in-process reference of the same run: at (1, 512)
    one at a time, p50 over p50; at (2, 512) and (7, 512) saturated, the served seq/s over
    the reference's best of its request-size call and its 126-row batch."""
    by = {r["shape"]: r for r in table}
    out: dict[str, Any] = {}
    for name, ref in refs.items():
        shapes = ref.get("shapes", {})
        row: dict[str, Any] = {}
        if "1x512" in shapes:
            row["p50_1x512_ms"] = shapes["1x512"]["p50_ms"]
            row["latency_1x512_ratio"] = round(shapes["1x512"]["p50_ms"] / by["1x512"]["p50_ms"], 2)
        for shape in ("2x512", "7x512"):
            seq = [shapes[k]["seq_s"] for k in (shape, "126x512") if k in shapes]
            if seq:
                row[f"best_seq_s_{shape}"] = max(seq)
                row[f"ratio_{shape}"] = round(by[shape]["seq_s"] / max(seq), 2)
        out[name] = row
    return out


def serve_targets(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each of SERVE_TARGETS: what the default variant got, and whether that meets it."""
    by = {r["shape"]: r for r in table}
    got = {
        "p50_ms_1x512": by["1x512"]["p50_ms"],
        "seq_s_7x512": by["7x512"]["seq_s"],
        "ratio_2x512": by["2x512"]["ratio"],
        "tokens_7x512p_over_full": round(by["7x512p"]["tokens_s"] / by["7x512"]["tokens_s"], 3),
    }
    return {
        k: {"target": SERVE_TARGETS[k], "got": v, "met": met(v, SERVE_TARGETS[k])}
        for k, v in got.items()
    }


def show_serve(result: dict[str, Any]) -> None:
    """Print the table, the targets, and one line per other variant and per reference."""
    columns = (
        "shape", "p50 ms (1 at a time)", "p95 ms", "seq/s saturated (in flight)",
        "real tokens/s", "old FP32 eager ms", "old seq/s", "ratio",
    )  # fmt: skip
    rows = []
    for r in result["table"]:
        rows.append((
            r["shape"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
            f"{r['seq_s']:,.0f} ({r['in_flight']})", f"{r['tokens_s']:,}",
            f"{r['old_p50_ms']:.2f}", f"{r['old_seq_s']:,.1f}", f"{r['ratio']:.1f}x",
        ))  # fmt: skip
    title = f"torch-gpu through tritonserver vs the old runtime — {result['device']}"
    table(title, columns, rows)
    for name, t in result["targets"].items():
        console.print(
            f"{name}: {t['got']} (target {t['target']}) {'MET' if t['met'] else 'MISSED'}"
        )
    for name, reason in result.get("load_failed", {}).items():
        console.print(f"variant {name} not served, failed to load: {reason.splitlines()[0]}")
    for v in [v for v in result["variants"] if v["name"] in result["served"]][1:]:
        s = result["served"][v["name"]]
        best = {k: max(x["seq_s"] for x in p["sweep"]) for k, p in s.items() if p["sweep"]}
        lat = {k: p["one_at_a_time"]["p50_ms"] for k, p in s.items() if p["one_at_a_time"]}
        label = escape(v.get("label", v["name"]))  # `hf [engine=hf]` is not markup
        console.print(f"variant {label}: p50 {lat} seq/s {best}")
    for name, row in result.get("against_references", {}).items():
        console.print(f"served default against {name} (in-process, same run): {row}")
