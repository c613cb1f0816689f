"""The serve bench's report: one row per shape (served against the old runtime), the
targets it is held to, the variants' latencies in alternating rounds, and the table and
lines it prints."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from bench.gpu.shapes import SHAPES, key

TARGETS = {
    "p50_ms_1x512": 2.5,  # (1,512) one at a time, p50 at most
    "seq_s_7x512": 1600.0,  # (7,512) saturated, at least
    "ratio_2x512": 14.0,  # (2,512) saturated over the old runtime, at least
    # (7,512) with a 60%-long last row: tokens/s over full rows', at least (no padding cost)
    "tokens_7x512p_over_full": 1.0,
}


def summarise(result: dict[str, Any]) -> list[dict[str, Any]]:
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
    for name in ("hf-fp16-eager", "compile-max-autotune"):
        shapes = refs.get(name, {}).get("shapes", {})
        row: dict[str, Any] = {}
        if "1x512" in shapes:
            row["p50_1x512_ms"] = shapes["1x512"]["p50_ms"]
            row["latency_1x512_ratio"] = round(shapes["1x512"]["p50_ms"] / by["1x512"]["p50_ms"], 2)
        for shape in ("2x512", "7x512"):
            seq = [shapes[k]["seq_s"] for k in (shape, "126x512") if k in shapes]
            if seq:
                row[f"best_seq_s_{shape}"] = max(seq)
                row[f"ratio_{shape}"] = round(by[shape]["seq_s"] / max(seq), 2)
        if refs.get(name, {}).get("skipped"):
            row["skipped"] = refs[name]["skipped"]
        if "compile_s" in refs.get(name, {}):
            row["compile_s"] = refs[name]["compile_s"]
        out[name] = row
    return out


def targets(table: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each of TARGETS: what the default variant got, and whether that meets it."""
    by = {r["shape"]: r for r in table}
    got = {
        "p50_ms_1x512": by["1x512"]["p50_ms"],
        "seq_s_7x512": by["7x512"]["seq_s"],
        "ratio_2x512": by["2x512"]["ratio"],
        "tokens_7x512p_over_full": round(by["7x512p"]["tokens_s"] / by["7x512"]["tokens_s"], 3),
    }
    return {
        k: {
            "target": TARGETS[k],
            "got": v,
            "met": v <= TARGETS[k] if k.startswith("p50") else v >= TARGETS[k],
        }
        for k, v in got.items()
    }


def show(result: dict[str, Any]) -> None:
    """Print the table, the targets, one line per other variant and the parity checks."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"torch-gpu through tritonserver vs the old runtime — {result['device']}")
    for col in (
        "shape",
        "p50 ms (1 at a time)",
        "p95 ms",
        "seq/s saturated (in flight)",
        "real tokens/s",
        "old FP32 eager ms",
        "old seq/s",
        "ratio",
    ):
        table.add_column(col, justify="right")
    for r in result["table"]:
        table.add_row(
            r["shape"],
            f"{r['p50_ms']:.2f}",
            f"{r['p95_ms']:.2f}",
            f"{r['seq_s']:,.0f} ({r['in_flight']})",
            f"{r['tokens_s']:,}",
            f"{r['old_p50_ms']:.2f}",
            f"{r['old_seq_s']:,.1f}",
            f"{r['ratio']:.1f}x",
        )
    console = Console(width=140)
    console.print(table)
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
        console.print(f"variant {v.get('label', v['name'])}: p50 {lat} seq/s {best}")
    rounds = result.get("latency_rounds")
    if rounds:
        console.print(
            f"{rounds['shape']} p50 in {len(rounds['p50_ms'][rounds['against']])} alternating "
            f"rounds: median {rounds['median_p50_ms']} ms; each variant's paired difference "
            f"from {rounds['against']}, median (min..max): "
            + ", ".join(
                f"{n} {d['median']:+.3f} ({d['min']:+.3f}..{d['max']:+.3f}) ms"
                for n, d in rounds["paired_delta_ms"].items()
            )
        )
    for name, row in result.get("against_references", {}).items():
        console.print(f"served default against {name} (in-process, same run): {row}")
    for name, check in result.get("parity", {}).items():
        console.print(f"parity {name}: {check}")


def latency_rounds(
    measure: Callable[[str], float], names: list[str], rounds: int, shape: str
) -> dict[str, Any]:
    """p50 of every variant in `rounds` rounds, the order reversed each round (a drift of
    the machine, or the cost of going first, falls on each variant alike), and each
    variant's difference from the first one's in the same round: its median is the
    variant's own cost, and its spread says how much of it the machine's noise can be."""
    p50: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for n in names if r % 2 == 0 else names[::-1]:
            p50[n].append(measure(n))
    first = names[0]
    deltas = {n: [a - b for a, b in zip(p50[n], p50[first], strict=True)] for n in names[1:]}
    return {
        "shape": shape,
        "against": first,
        "p50_ms": p50,
        "median_p50_ms": {n: round(statistics.median(v), 3) for n, v in p50.items()},
        "paired_delta_ms": {
            n: {
                "median": round(statistics.median(d), 3),
                "min": round(min(d), 3),
                "max": round(max(d), 3),
            }
            for n, d in deltas.items()
        },
    }
