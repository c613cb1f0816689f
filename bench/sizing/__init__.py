"""Sizing: what a deployment of docq needs around its GPUs, measured with docq's own code.

    python -m bench.sizing redis     one Redis under docq's calls: its CPU and memory a document
    python -m bench.sizing uploads   Redis bytes a queued scanned page; the API's RSS per upload
    python -m bench.sizing manifest  a manifest job's Redis footprint and its first result

Each prints one table and writes its figures as JSON (`--out`), with the command, the date
and how busy the machine was. The Redis figures come from INFO (`used_memory`) and MEMORY
USAGE, read here once for all three.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
from rich.console import Console
from rich.table import Table

# A table's rows: what was measured, and its value as shown.
Rows = list[tuple[str, str]]


def used_memory(r: redis.Redis) -> int:
    """Redis' `used_memory` (INFO memory): every byte its allocator holds."""
    return int(r.info("memory")["used_memory"])


def key_bytes(r: redis.Redis) -> int:
    """The bytes Redis counts for every key (MEMORY USAGE, values and names)."""
    return sum(r.memory_usage(k) or 0 for k in r.scan_iter(count=1000))


def record(argv: list[str] | None) -> dict[str, Any]:
    """What every run's JSON opens with: its command, when, and how busy the machine was
    (it is shared: a load average says what else had the cores)."""
    args = sys.argv[1:] if argv is None else argv
    return {
        "command": " ".join(["python -m bench.sizing", *args]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "node": os.uname().nodename,
        "cpu_count": os.cpu_count(),
        "loadavg_1m_before": os.getloadavg()[0],
    }


def write(title: str, rows: Rows, run: dict[str, Any], out: Path | None) -> None:
    """Print the run's table (what was measured, its value), then write `run` to `out`."""
    table = Table(title=title)
    table.add_column("measure", no_wrap=True)
    table.add_column("value", justify="right")
    for row in rows:
        table.add_row(*row)
    Console(width=120).print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(run, indent=1, default=str) + "\n")
