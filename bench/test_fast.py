"""How long `make test-fast` takes, its line as committed against variants of it, in turn.

    .venv/bin/python -m bench.test_fast --rounds 2 --variant old:PYCACHE= \\
        --out bench/runs/test-fast-cpu-DATE.json

Each round runs `make test-fast` once as committed (`now`) and once per `--variant`
(`NAME:VAR=VALUE,...`: make variables set on the command line, e.g. `PYCACHE=` runs the line
without its bytecode folder), one after the other, so that a machine whose load drifts
weighs on every side alike. Per run: wall, user and system seconds of make and everything
under it, the 1-minute load average before it, pytest's last line and each test that failed
or erred, named.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from docq.config import REPO_ROOT


def run(make_args: list[str]) -> dict[str, Any]:
    """One `make test-fast`: its seconds, the load before it and what pytest said."""
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    cmd = ["make", "test-fast", *make_args, "PYTEST_ARGS=-q -rfE -p no:cacheprovider"]
    out = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True).stdout
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = out.strip().splitlines()
    return {
        "started": time.strftime("%H:%M:%S", time.gmtime(time.time() - wall)),
        "loadavg_1m": round(load, 2),
        "wall_s": round(wall, 1),
        "user_s": round(after.ru_utime - before.ru_utime, 1),
        "sys_s": round(after.ru_stime - before.ru_stime, 1),
        "tests": lines[-1].strip("= ") if lines else "",
        "failed": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[], help="NAME:VAR=VALUE,...")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    sides = {"now": []} | {
        name: [a for a in spec.split(",") if a]
        for name, _, spec in (v.partition(":") for v in args.variant)
    }
    report: dict[str, Any] = {
        "command": "python -m bench.test_fast "
        + " ".join([f"--rounds {args.rounds}", *(f"--variant {v}" for v in args.variant)]),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "cores": len(os.sched_getaffinity(0)),
        "runs": [],
    }
    for r in range(args.rounds):
        for name, make_args in sides.items():
            report["runs"].append({"round": r + 1, "side": name, **run(make_args)})
            print(report["runs"][-1], flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(report, indent=1) + "\n")
    table = Table(title=f"make test-fast, {report['cores']} cores")
    for col in ("round", "side", "load before", "wall s", "user s", "tests"):
        table.add_column(col)
    for x in report["runs"]:
        row = (x["round"], x["side"], x["loadavg_1m"], x["wall_s"], x["user_s"], x["tests"])
        table.add_row(*map(str, row))
    Console().print(table)


if __name__ == "__main__":
    main()
