"""`python -m bench.chaos --seconds 300 --documents 5000 --seed 1 --out bench/chaos-….json`:
runs the chaos (bench/chaos/run.py), prints a table, writes the raw JSON to `--out` and the
fault timeline and every process's log lines about recovery to the same name in `.log`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path

from bench.chaos.run import Config, Report, run

# The worker log lines that show a recovery path taken, counted in the run's log.
RECOVERY = (
    "lease expired",
    "back in its queue",
    "in no queue",
    "never enqueued",
    "retrying in",
    "Unrecoverable error",
)


def recovery_summary(workdir: Path, examples: int = 2) -> str:
    """How often each process's log shows each recovery path, with its first lines: the
    evidence that the paths ran, in kilobytes (every line would be megabytes)."""
    out = ["", "recovery paths seen in the processes' logs (count, then the first lines):"]
    for proc_log in sorted(workdir.glob("*.log")):
        lines = proc_log.read_text(errors="replace").splitlines()
        for marker in RECOVERY:
            seen = [line for line in lines if marker in line]
            if seen:
                out.append(f"[{proc_log.stem}] {marker!r}: {len(seen)}")
                out += [f"    {line[:300]}" for line in seen[:examples]]
    return "\n".join(out) + "\n"


def table(report: Report, recovery_s: float) -> str:
    rows = [
        ("faults (SIGKILL)", len(report.faults)),
        ("processes killed", ", ".join(sorted({f["process"] for f in report.faults}))),
        ("exits by themselves (restarted)", len(report.crashes)),
        ("jobs", report.jobs),
        ("documents", report.documents),
        ("lost", report.lost),
        ("duplicated", report.duplicated),
        ("relabelled", report.relabelled),
        ("documents failed", report.failed_documents),
        ("jobs not final", len(report.not_final)),
        ("events delivered", report.webhooks.get("events")),
        ("events missing", report.events_missing),
        ("events delivered twice", report.events_duplicated),
        ("bad signatures", report.webhooks.get("bad_signatures")),
        ("deliveries refused (503) on purpose", report.webhooks.get("refused_503")),
        ("reference run (s)", report.reference_s),
        ("last job done after the last fault (s)", report.recovered_s),
        ("  of which the faults' cost, not work (s)", report.recovery_lag_s),
        (
            "client: connections refused / 5xx",
            f"{report.client.get('refused')} / {report.client.get('unavailable')}",
        ),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    verdict = report.violations(recovery_s) or ["all invariants held"]
    return "\n".join([*lines, "", *verdict])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--documents", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("bench/results/chaos.json"))
    args = parser.parse_args(argv)
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    log_path = out.with_suffix(".log")
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s %(message)s",
        handlers=[logging.FileHandler(log_path, mode="w"), logging.StreamHandler(sys.stderr)],
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per poll otherwise
    workdir = Path(tempfile.mkdtemp(prefix="docq-chaos-"))
    cfg = Config(seconds=args.seconds, documents=args.documents, seed=args.seed, workdir=workdir)
    report = run(cfg)
    with log_path.open("a") as f:
        f.write(recovery_summary(workdir))
    command = "python -m bench.chaos " + " ".join(sys.argv[1:] if argv is None else argv)
    out.write_text(json.dumps({"command": command, **report.to_json()}, indent=1) + "\n")
    summary = table(report, cfg.recovery_s)
    with log_path.open("a") as f:
        f.write("\n" + summary + "\n")
    print(summary)
    return 1 if report.violations(cfg.recovery_s) else 0


if __name__ == "__main__":
    raise SystemExit(main())
