"""`python -m devstack NAME`: replace this process with the stack's process NAME (the
Procfile's commands), so that honcho's signals reach it directly. Before the API starts,
the development API key is ensured (.run/dev-api-key); Flower gets its login."""

from __future__ import annotations

import os
import sys

from devstack import credentials
from devstack.stack import RUN_DIR, local_stack
from docq.config import get_settings

DEV_API_KEY = RUN_DIR / "dev-api-key"
FLOWER_LOGIN = RUN_DIR / "flower-login"


def main(argv: list[str]) -> None:
    stack = local_stack(get_settings().log_level, get_settings().redis_mode)
    if argv == ["--names"]:  # what `make up` asks honcho to start, in this mode
        print(" ".join(stack))
        return
    if len(argv) != 1 or argv[0] not in stack:
        sys.exit(f"usage: python -m devstack {{{','.join(stack)}}}")
    process = stack[argv[0]]
    for data in ("redis", "redis-replica"):
        (RUN_DIR / data).mkdir(parents=True, exist_ok=True)
    if process.config is not None:  # the roles of stack.py, whatever a failover changed
        process.config[0].parent.mkdir(parents=True, exist_ok=True)
        process.config[0].write_text(process.config[1])
    env = {**os.environ, **process.env}
    # The settings this process will read (the mode's Redis URL), for the steps below too.
    os.environ.update(process.env)
    get_settings.cache_clear()
    if argv[0] == "api" and get_settings().auth_enabled:
        credentials.ensure_dev_key(get_settings(), DEV_API_KEY)
    if argv[0] == "flower":  # in the environment, not argv: `ps` shows argv to everyone
        env["FLOWER_BASIC_AUTH"] = credentials.flower_login(get_settings(), FLOWER_LOGIN)
    if process.nice:
        os.nice(process.nice)
    os.execve(process.argv[0], process.argv, env)


if __name__ == "__main__":
    main(sys.argv[1:])
