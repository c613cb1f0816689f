"""The report of bench/redis_load.py: the figures of a run (documents/s, redis-server's CPU
per document and the rate at which it would fill its core, what limited the run), and its
table, also printed again from a saved JSON: `python -m bench.redis_report run.json`."""

from __future__ import annotations

import argparse
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from docq.config import Settings

SHOWN = (
    "wall_s", "jobs", "documents", "incomplete_jobs", "docs_per_s", "redis_cpu_s",
    "redis_utilisation", "redis_cpu_ms_per_doc", "redis_saturation_docs_per_s",
    "over_eight_gpus", "clients_cpu_s", "clients_cores_busy",
)  # fmt: skip
# What 8 H200s would ask of one Redis: 8 x about 700 documents/s (docs/performance.md).
EIGHT_GPUS_DOCS_PER_S = 5600


def summarise(
    command: list[str], args: argparse.Namespace, run: dict[str, Any], mem: dict[str, Any]
) -> dict[str, Any]:
    """The run's figures; `command`: its arguments."""
    settings = Settings()  # what each Side is made of (DOCQ_* as set), for the record
    docs = sum(s["documents"] for s in run["samples"])
    redis_cpu = run["cpu_s"]["redis"]
    clients_cpu = round(sum(v for k, v in run["cpu_s"].items() if k != "redis"), 2)
    out = {
        "command": " ".join(["python -m bench.redis_load", *command]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "loadavg_1m_before": run["loadavg_1m_before"],
        "redis_version": run["redis_version"],
        "clients": args.clients,
        "docs_per_job": args.docs_per_job,
        "shard_size": settings.shard_size,
        "keep_documents": settings.keep_documents,
        "seconds": args.seconds,
        "wall_s": run["wall_s"],
        "jobs": sum(s["jobs"] for s in run["samples"]),
        "jobs_written": mem["uploads"] + sum(s["uploads"] for s in run["samples"]),
        "documents": docs,
        "incomplete_jobs": sum(s["incomplete_jobs"] + s["unfinished_jobs"] for s in run["samples"]),
        "docs_per_s": round(docs / run["wall_s"], 1),
        "redis_cpu_s": redis_cpu,
        "redis_utilisation": round(redis_cpu / run["wall_s"], 3),
        "redis_cpu_ms_per_doc": round(1000 * redis_cpu / docs, 4) if docs else None,
        "redis_saturation_docs_per_s": round(docs / redis_cpu) if redis_cpu else None,
        # above 1: one Redis core would keep up with 8 GPUs' documents
        "over_eight_gpus": round(docs / redis_cpu / EIGHT_GPUS_DOCS_PER_S, 2)
        if redis_cpu
        else None,
        "clients_cpu_s": clients_cpu,
        "clients_cores_busy": round(clients_cpu / run["wall_s"], 2),
        "memory": mem,
        "cpu_s": run["cpu_s"],
        "samples": run["samples"],
    }
    out["limited_by"] = limit(out)
    return out


def limit(s: dict[str, Any]) -> str:
    """What held the rate back: Redis's core, the clients' CPU (all cores busy), or neither
    (the clients waited on Redis's answers: each write is fsynced before it is answered)."""
    if s["redis_utilisation"] >= 0.9:
        return "Redis (one core busy)"
    busy = s["redis_utilisation"] + s["clients_cores_busy"]
    if busy >= 0.9 * s["cpu_count"]:
        return "the cores (clients and Redis share them)"
    if busy + s["loadavg_1m_before"] >= 0.9 * s["cpu_count"]:
        return f"the cores, shared with other work (load average {s['loadavg_1m_before']:.1f})"
    if s["clients_cores_busy"] >= 0.9 * s["clients"]:
        return "the clients' CPU"
    return "neither CPU: the clients waited on Redis's answers (appendfsync always)"


def print_table(s: dict[str, Any]) -> None:
    """The run's table; its caption says what held the rate back."""
    table = Table(title=f"one redis-server, {s['clients']} clients, {s['cpu_count']} cores")
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    for key in SHOWN:
        table.add_row(key, json.dumps(s[key]))
    for key in ("bytes_per_queued_document", "bytes_per_stored_result"):
        table.add_row(f"used_memory {key}", json.dumps(s["memory"][key]))
    need = f"8 H200s need about {EIGHT_GPUS_DOCS_PER_S:,} docs/s"
    table.caption = f"limited by {s['limited_by']}; {need}"
    Console().print(table)


def main() -> None:
    p = argparse.ArgumentParser(description="print a saved bench/redis_load.py run's table")
    p.add_argument("run", type=Path)
    print_table(json.loads(p.parse_args().run.read_text()))


if __name__ == "__main__":
    main()
