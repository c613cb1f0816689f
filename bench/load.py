"""The load run of issue 11: Locust headless against a running docq (`make up`), two
tenants uploading, polling and reading results (bench/locustfile.py); writes the API's
p50/p99 per endpoint, the JOB entries and the failure count as JSON.

    .venv/bin/python -m bench.load                      # 100 users, 3 minutes
    .venv/bin/python -m bench.load --users 5 --time 20s --out /tmp/load.json  # rehearsal

Locust's own CSV summary (written to a temporary folder) is what the JSON is made from:
its percentiles are Locust's, rounded as Locust rounds them (two significant digits).
The exit status is 1 when any request failed, so a script can gate on it.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
LOCUSTFILE = BENCH / "locustfile.py"


def _number(value: str) -> float | None:
    return None if value in ("", "N/A") else float(value)


def summarize(stats_csv: Path) -> dict[str, Any]:
    """Locust's `*_stats.csv` as {"endpoints", "jobs", "requests", "failures", ...}: the
    API's endpoints apart from the JOB entries (upload to last result, not one request)
    and the count of 429s the clients obeyed (their answers are in POST /v1/jobs too)."""
    endpoints: dict[str, Any] = {}
    jobs: dict[str, Any] = {}
    refused = 0
    with stats_csv.open(newline="") as f:
        for row in csv.DictReader(f):
            entry: dict[str, Any] = {
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "p50_ms": _number(row["50%"]),
                "p99_ms": _number(row["99%"]),
                "max_ms": _number(row["Max Response Time"]),
                "requests_per_s": _number(row["Requests/s"]),
            }
            if row["Name"] == "Aggregated":  # endpoints and JOB entries together: not kept
                continue
            if row["Type"] == "REFUSED":  # 429s obeyed (bench/locustfile.py), also in POST's
                refused += entry["requests"]
            elif row["Type"] == "JOB":
                jobs[row["Name"]] = entry
            else:
                endpoints[f"{row['Type']} {row['Name']}"] = entry
    api_requests = sum(e["requests"] for e in endpoints.values())
    api_failures = sum(e["failures"] for e in endpoints.values())
    return {
        "endpoints": endpoints,
        "jobs": jobs,
        "requests": api_requests,
        "failures": api_failures,
        "job_failures": sum(e["failures"] for e in jobs.values()),
        "uploads_refused_429": refused,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="http://127.0.0.1:8080")
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--spawn-rate", type=float, default=10)
    parser.add_argument("--time", default="3m", help="Locust's --run-time (3m, 20s, ...)")
    parser.add_argument("--out", type=Path, default=BENCH / "load.json")
    args = parser.parse_args(argv)

    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = Path(tmp) / "load"
        cmd = [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--headless",
            "--users",
            str(args.users),
            "--spawn-rate",
            str(args.spawn_rate),
            "--run-time",
            args.time,
            "--host",
            args.host,
            "--csv",
            str(prefix),
            "--only-summary",
            "--stop-timeout",
            "10",
        ]
        done = subprocess.run(cmd, cwd=BENCH.parent, check=False)
        stats = Path(f"{prefix}_stats.csv")
        if not stats.exists():
            print(f"locust wrote no statistics (exit {done.returncode})", file=sys.stderr)
            return 2
        summary = summarize(stats)
    report = {
        "what": "Locust against `make up`: two tenants uploading, polling and reading results "
        "(bench/locustfile.py)",
        "started_at": started.isoformat(timespec="seconds"),
        "host": args.host,
        "users": args.users,
        "spawn_rate": args.spawn_rate,
        "run_time": args.time,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        **summary,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        json.dumps(
            {k: report[k] for k in ("requests", "failures", "job_failures", "uploads_refused_429")}
        )
    )
    for name, e in summary["endpoints"].items():
        print(f"{name}: {e['requests']} requests, p50 {e['p50_ms']} ms, p99 {e['p99_ms']} ms")
    print(f"written to {args.out}")
    return 1 if summary["failures"] or summary["job_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
