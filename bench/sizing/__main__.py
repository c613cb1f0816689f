"""The sizing tools' command line: `python -m bench.sizing TOOL [options] [--out FILE]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.sizing import manifest, record, redis_load, uploads, write

TOOLS = {
    "redis": (redis_load, "one Redis under docq's calls: its CPU and memory a document"),
    "uploads": (uploads, "Redis bytes a queued scanned page; the API's peak RSS per upload"),
    "manifest": (manifest, "a manifest job's Redis footprint, its 202 and its first result"),
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m bench.sizing", description=__doc__)
    subparsers = p.add_subparsers(dest="tool", required=True)
    for name, (tool, help_) in TOOLS.items():
        sub = subparsers.add_parser(name, help=help_, description=tool.__doc__)
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        tool.add_arguments(sub)
        sub.add_argument("--out", type=Path, help="write the run's figures here as JSON")
    args = p.parse_args(argv)
    title, rows, run = TOOLS[args.tool][0].run(args, record(argv))
    write(title, rows, run, args.out)
    return run


if __name__ == "__main__":
    main()
