"""The fault runs, at two scales: a client uploading throughout while faults are applied in
a seeded random order, then the checker's report (check.py) as a table, and as JSON (--out).

    python -m bench.faults chaos --seconds 300 --documents 10000 --seed 1
        one host (chaos.py): a random process SIGKILLed every 10-30 s under one big job,
        its supervisor starting it again
    sudo .venv/bin/python -m bench.faults fleet --seconds 300 --seed 5
        nine hosts (devstack/fleet, as root): nemeses (partitions, slow links, hosts lost)
        applied and healed one after another (fleet.py)

The chaos run also writes its fault timeline to the same name in `.log`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.faults import chaos, fleet
from bench.report import table, write_json
from devstack.fleet import net
from devstack.fleet.fleet import Fleet
from devstack.fleet.hosts import Layout


def rows(report: dict[str, Any]) -> list[tuple[str, Any]]:
    """The figures a reader looks for first, one per row: the checker's, then the run's."""
    hooks = report["webhooks"]
    rows = [
        ("uploads / accepted (202)", f"{report['uploads']} / {report['accepted']}"),
        ("documents acknowledged", report["documents"]),
        ("lost / duplicated / relabelled", "{lost} / {duplicated} / {relabelled}".format(**report)),
        ("documents failed", report["failed"]),
        ("jobs never final", len(report["not_final"])),
        ("webhook events delivered", hooks["jobs"]),
        (
            "events missing / conflicting / twice",
            " / ".join(str(len(hooks[k])) for k in ("missing", "conflicting", "twice")),
        ),
        ("uploads that hung", report["hangs"]),
        ("answers", report["answers"]),
    ]
    if "crashes" not in report:  # the fleet's
        return [
            *rows,
            ("faults", ", ".join(str(f["what"]) for f in report["faults"])),
            (
                "first 202 after each heal (s)",
                [r["first_202_after_heal_s"] for r in report["recovery"]],
            ),
            ("last job final after the last heal (s)", report["last_final_after_last_heal_s"]),
        ]
    return [  # the chaos run's: the reference run is one of the jobs above
        *rows,
        ("faults (SIGKILL)", len(report["faults"])),
        ("processes killed", ", ".join(sorted({f["process"] for f in report["faults"]}))),
        ("exits by themselves (restarted)", len(report["crashes"])),
        ("deliveries refused (503) on purpose", report["refused_503"]),
        ("reference run: documents, s", tuple(report["reference"].values())),
        ("last job done after the last fault (s)", report["recovered_s"]),
        ("  of which the faults' cost, not work (s)", report["recovery_lag_s"]),
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.faults",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("scale", choices=("chaos", "fleet"))
    p.add_argument("--seconds", type=float, default=300, help="faults for this long")
    p.add_argument("--seed", type=int, default=0, help="fixes the faults and the uploads")
    p.add_argument("--documents", type=int, default=5000, help="chaos: the big job's")
    p.add_argument("--out", type=Path, help="the report as JSON")
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix=f"docq-{args.scale}-"))
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if args.out and args.scale == "chaos":
        handlers.append(logging.FileHandler(args.out.with_suffix(".log"), mode="w"))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s %(message)s", handlers=handlers
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per poll otherwise
    if args.scale == "chaos":
        report = chaos.run(chaos.Config(args.seconds, args.documents, args.seed, workdir))
    else:
        # namespaces dqb-* on 10.77.1.0/24: apart from `python -m devstack.fleet`'s
        network = net.Network("dqb", "10.77.1")
        if reason := net.probe(network):
            print(f"bench.faults: not run: {reason}", file=sys.stderr)
            return 2
        hosts = Fleet(Layout(network, workdir / "hosts"))
        try:
            hosts.up()
            steps = fleet.random_steps(args.seconds, args.seed)
            report = fleet.run(hosts, steps, workdir / "run", seed=args.seed)
        finally:
            hosts.down()
    command = "python -m bench.faults " + " ".join(argv)
    report = {"command": command, "workdir": str(workdir), **report}
    if args.out:
        write_json(args.out, report)
    table(command, ("measure", "value"), rows(report))
    print("\n".join(report["violations"] or ["all invariants held"]))
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
