"""`python -m devstack.uvpip ARGS...`: `uv pip install ARGS` into this interpreter's
environment, with the package sources pip is configured with.

`make install` gives it uv.lock's pins, exported (`uv export`): every package at its locked
version, from whichever of these sources has it. Why uv: it installs the same pins as pip
about fifteen times faster (the install was a third of the first `make up`:
docs/performance.md, Start-up). Why this file: uv does not
read pip's configuration, and on a machine whose pip is pointed at local wheels (the CPU
build of torch lies on disk; an unpinned index would give the multi-GB CUDA build) uv must
look there too. `pip config list` gives what every scope (the environment, the files)
sets; the index, extra indexes, find-links and constraints become uv's flags (the
environment overriding the files, as in pip), and uv weighs every index alike, as pip does
(`unsafe-best-match`: by default uv takes a package only from the first index that has
it). A local path that does not exist is left out, as pip itself ignores it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

# pip's option -> uv's
FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraints",
}


# Sections of `pip config list`, weakest first: the environment (PIP_*) overrides the files,
# and a file's [install] section overrides its [global] one.
SECTIONS = ("global", "install", ":env:")


def pip_config() -> dict[str, list[str]]:
    """pip's configured value of each option, as pip would take it."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    ranked: dict[str, tuple[int, list[str]]] = {}
    for line in listed.splitlines():  # e.g. global.find-links='/opt/wheels'
        key, _, value = line.partition("=")
        section, _, option = key.rpartition(".")
        if option not in FLAGS or section not in SECTIONS:
            continue
        rank = SECTIONS.index(section)
        if rank >= ranked.get(option, (-1, []))[0]:  # files are listed in load order
            ranked[option] = (rank, shlex.split(shlex.split(value)[0]) if value else [])
    return {option: values for option, (_, values) in ranked.items()}


def exists(location: str) -> bool:
    """False only for a local path (or file: URL) that is not there."""
    parsed = urlparse(location)
    if parsed.scheme in ("http", "https"):
        return True
    return Path(parsed.path if parsed.scheme == "file" else location).exists()


def uv_flags(config: dict[str, list[str]]) -> list[str]:
    return [
        part
        for option, flag in FLAGS.items()
        for value in config.get(option, [])
        if exists(value)
        for part in (flag, value)
    ]


def main(argv: list[str]) -> int:
    uv = Path(sys.executable).with_name("uv")
    command = [str(uv), "pip", "install", "--python", sys.executable]
    command += ["--index-strategy", "unsafe-best-match", *uv_flags(pip_config())]
    return subprocess.run([*command, *argv]).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
