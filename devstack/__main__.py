"""`python -m devstack NAME`: replace this process with the stack's process NAME (the
Procfile's commands), so that honcho's signals reach it directly."""

from __future__ import annotations

import os
import sys

from devstack.stack import RUN_DIR, local_stack


def main(argv: list[str]) -> None:
    stack = local_stack()
    if len(argv) != 1 or argv[0] not in stack:
        sys.exit(f"usage: python -m devstack {{{','.join(stack)}}}")
    process = stack[argv[0]]
    (RUN_DIR / "redis").mkdir(parents=True, exist_ok=True)
    if process.nice:
        os.nice(process.nice)
    os.execve(process.argv[0], process.argv, {**os.environ, **process.env})


if __name__ == "__main__":
    main(sys.argv[1:])
