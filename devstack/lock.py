"""The project's one lock, uv.lock: the version it pins of each package.

`make install` installs these versions (exported by `uv export`); devstack/carry/pack.py carries
the same ones to the GPU machine, so what runs there is what the tests here ran.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "uv.lock"


def normalized(name: str) -> str:
    """A package's name as the lock spells it (PEP 503: lower case, runs of -_. one -)."""
    return "-".join(name.lower().replace("_", "-").replace(".", "-").split("-"))


def locked(lock: Path = LOCK) -> dict[str, str]:
    """Each locked package's version, by its normalized name."""
    packages = tomllib.loads(lock.read_text(encoding="utf-8"))["package"]
    return {normalized(p["name"]): str(p["version"]) for p in packages}


def pins(*names: str, lock: Path = LOCK) -> list[str]:
    """`name==version` of each package at its locked version; KeyError names one the lock
    lacks (a package no dependency of the project pulls in cannot be pinned from it)."""
    versions = locked(lock)
    missing = [name for name in names if normalized(name) not in versions]
    if missing:
        raise KeyError(f"not in {lock.name}: {', '.join(missing)}")
    return [f"{name}=={versions[normalized(name)]}" for name in names]
