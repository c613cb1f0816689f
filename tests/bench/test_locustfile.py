"""bench/locustfile.py: Locust loads it as `make load` does, in a process of its own:
importing Locust monkey-patches the interpreter with gevent."""

from __future__ import annotations

import subprocess
import sys

from devstack.services import REPO

LOAD = """
from locust.util.load_locustfile import load_locustfile

print(sorted(load_locustfile("bench/locustfile.py")[0]))
"""


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True, text=True
    )
    return done.stdout.strip().splitlines()[-1]


def test_locust_loads_the_locustfile() -> None:
    # Locust puts bench/ first on sys.path: no bench/ module may hide a package it imports.
    assert run(LOAD) == "['Client']"
