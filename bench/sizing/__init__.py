"""Sizing: what a deployment of docq needs around its GPUs, measured with docq's own code
(`python -m bench.sizing redis|uploads|manifest|scans`). Each tool prints one table and
writes its figures as JSON (`--out`, bench.report's helpers) with the command, the date and
how busy the machine was; the Redis figures come from INFO and MEMORY USAGE, read here.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from bench.report import table, write_json

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


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`python -m bench.sizing TOOL [options] [--out FILE]`: runs one tool; its figures."""
    from bench.sizing import manifest, redis_load, scans, uploads  # they import the helpers above

    tools = {
        "redis": (redis_load, "one Redis under docq's calls: its CPU and memory a document"),
        "uploads": (uploads, "Redis bytes a queued scanned page; the API's peak RSS per upload"),
        "manifest": (manifest, "a manifest job's Redis footprint, its 202 and its first result"),
        "scans": (scans, "docq's CPU seconds a 300 dpi scanned page, upload to result"),
    }
    p = argparse.ArgumentParser(prog="python -m bench.sizing", description=__doc__)
    subparsers = p.add_subparsers(dest="tool", required=True)
    for name, (tool, help_) in tools.items():
        sub = subparsers.add_parser(name, help=help_, description=tool.__doc__)
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        tool.add_arguments(sub)
        sub.add_argument("--out", type=Path, help="write the run's figures here as JSON")
    args = p.parse_args(argv)
    title, rows, run = tools[args.tool][0].run(args, record(argv))
    table(title, ("measure", "value"), rows)
    if args.out is not None:
        write_json(args.out, run)
    return run
