"""`python -m devstack.fleet up|down|status` (as root): docq as a fleet of hosts on this
machine (docs/fleet.md). `up` makes the hosts, starts every process and returns, printing
the API's address and a key; `down` kills every process of the fleet and removes its hosts
(also what a crashed run left)."""

from __future__ import annotations

import argparse
import logging
import sys

from devstack.fleet import net
from devstack.fleet.fleet import Fleet
from devstack.fleet.hosts import HOSTS, Layout
from devstack.stack import RUN_DIR


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m devstack.fleet")
    parser.add_argument("command", choices=("up", "down", "status"))
    parser.add_argument("--prefix", default="dqf", help="names of the namespaces and bridge")
    parser.add_argument("--subnet", default="10.77.0", help="the fleet's /24 (its first 3 bytes)")
    parser.add_argument("--workdir", default=str(RUN_DIR / "fleet"), help="the hosts' disks")
    args = parser.parse_args(argv)
    if reason := net.available():
        sys.exit(f"devstack.fleet: {reason}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from pathlib import Path

    layout = Layout(net.Network(args.prefix, args.subnet), Path(args.workdir))
    fleet = Fleet(layout)
    if args.command == "down":
        fleet.down()
        print("fleet down")
        return
    if args.command == "status":
        up = layout.net.namespaces()
        for host in HOSTS:
            pids = net.pids(layout.net.ns(host)) if layout.net.ns(host) in up else []
            print(f"{host:9} {layout.address(host):12} {len(pids)} processes")
        return
    try:
        fleet.up()
    except BaseException:
        fleet.down()
        raise
    print(f"API       {layout.api_url}  (reach it from the client host:")
    print(f"          ip netns exec {layout.net.ns('client')} curl {layout.api_url}/healthz)")
    print(f"API key   {fleet.api_key('dev')}")
    print(f"Redis     {layout.redis_url}")
    print(f"logs      {args.workdir}/<host>/<process>.log; stop: python -m devstack.fleet down")


if __name__ == "__main__":
    main(sys.argv[1:])
