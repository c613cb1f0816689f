"""How long `make test` takes, from its own output: the summary line and the slowest tests.

    PYTEST_ARGS="--durations=30" bash -c 'time .ci/run' > ci.log 2>&1
    .venv/bin/python -m bench.ci_time ci.log --label xdist --out bench/ci-time.json

Appends one run (label, tests' seconds, passed/skipped/failed, the bash `real` time and
the slowest tests) to the JSON file, so runs before and after a change sit side by side.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

SUMMARY = re.compile(r"=+ (?P<counts>.*?) in (?P<seconds>[\d.]+)s")
DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>call|setup|teardown) +(?P<test>\S+)")
REAL = re.compile(r"^real\t(?P<m>\d+)m(?P<s>[\d.]+)s")


def parse(text: str) -> dict[str, object]:
    run: dict[str, object] = {"slowest": []}
    for line in text.splitlines():
        if (m := SUMMARY.search(line)) and ("passed" in line or "failed" in line):
            run["tests_s"] = float(m["seconds"])
            run["counts"] = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", m["counts"])}
        elif m := DURATION.match(line):
            run["slowest"].append(  # type: ignore[attr-defined]
                {"s": float(m["seconds"]), "phase": m["phase"], "test": m["test"]}
            )
        elif m := REAL.match(line):
            run["real_s"] = int(m["m"]) * 60 + float(m["s"])
    if "tests_s" not in run:
        raise SystemExit("no pytest summary line in the log")
    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--label", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    runs = json.loads(args.out.read_text()) if args.out.exists() else []
    run = {"label": args.label, "date": time.strftime("%Y-%m-%d"), **parse(args.log.read_text())}
    runs.append(run)
    args.out.write_text(json.dumps(runs, indent=1) + "\n")
    seconds = f"{run['tests_s']} s of tests, {run.get('real_s')} s in all"
    print(f"{args.label}: {seconds}, {run['counts']}")


if __name__ == "__main__":
    main()
