"""`python -m bench.fleet --seconds 300 --seed N` (as root): docq as a fleet of hosts
(devstack/fleet), a client uploading throughout while nemeses are applied and healed in a
seeded random order, then the checker's report as JSON (--out) and a table.

    python -m bench.fleet --seconds 300 --seed 7 --out bench/fleet-5min-<date>.json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.fleet.run import random_steps, run
from devstack.fleet import net
from devstack.fleet.fleet import Fleet
from devstack.fleet.hosts import Layout


def table(report: dict[str, Any]) -> str:
    """The figures a reader looks for first, one per row."""
    webhooks = report["webhooks"]
    rows = [
        ("faults", ", ".join(str(f["what"]) for f in report["faults"])),
        ("uploads / accepted (202)", f"{report['uploads']} / {report['accepted']}"),
        ("documents acknowledged", report["documents"]),
        (
            "lost / duplicated / relabelled",
            f"{report['lost']} / {report['duplicated']} / {report['relabelled']}",
        ),
        ("jobs never final", len(report["not_final"])),
        (
            "webhook events missing / conflicting",
            f"{len(webhooks['missing'])} / {len(webhooks['conflicting'])}",
        ),
        ("uploads that hung", report["hangs"]),
        ("answers", report["answers"]),
        (
            "first 202 after each heal (s)",
            [r["first_202_after_heal_s"] for r in report["recovery"]],
        ),
        ("last job final after the last heal (s)", report["last_final_after_last_heal_s"]),
        ("violations", len(report["violations"])),
    ]
    return "\n".join(f"| {name} | {value} |" for name, value in rows)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fleet")
    p.add_argument("--seconds", type=float, default=300, help="faults for this long")
    p.add_argument("--seed", type=int, default=0, help="fixes the nemeses' order and holds")
    p.add_argument("--out", type=Path, help="the report as JSON (default: stdout only)")
    p.add_argument("--prefix", default="dqb", help="the fleet's namespaces' prefix")
    p.add_argument("--subnet", default="10.77.1")
    args = p.parse_args(argv)
    network = net.Network(args.prefix, args.subnet)
    if reason := net.probe(network):
        print(f"bench.fleet: not run: {reason}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    workdir = Path(tempfile.mkdtemp(prefix="docq-fleet-"))
    fleet = Fleet(Layout(network, workdir / "hosts"))
    try:
        fleet.up()
        steps = random_steps(args.seconds, args.seed)
        report = run(fleet, steps, workdir / "run", seed=args.seed)
    finally:
        fleet.down()
    report["workdir"] = str(workdir)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    for violation in report["violations"]:
        print(f"VIOLATION: {violation}")
    return 1 if report["violations"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
