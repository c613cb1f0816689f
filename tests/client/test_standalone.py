"""docq-client installed alone (client/pyproject.toml), as a user installs it: in a fresh
virtualenv, with none of the server's packages, its SDK imports and `docq` answers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from devstack.stack import REPO

pytestmark = pytest.mark.slow  # builds a wheel and installs it with its dependencies

# What the server needs and a client must never pull in.
SERVER = (
    "celery",
    "tritonclient",
    "transformers",
    "tesserocr",
    "redis",
    "docq",
    "api",
    "conversion",
)
UV = Path(sys.executable).with_name("uv")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtualenv with docq-client alone, built from a copy of client/ (a build leaves
    its build/ and egg-info beside the sources)."""
    root = tmp_path_factory.mktemp("standalone")
    source = shutil.copytree(REPO / "client", root / "client")
    env = root / "venv"
    subprocess.run([UV, "venv", "--quiet", "--python", sys.executable, env], check=True)
    python = env / "bin" / "python"
    subprocess.run([UV, "pip", "install", "--quiet", "--python", python, source], check=True)
    return env


def run(venv: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run outside the repository, so that its packages are not importable from the cwd."""
    return subprocess.run(
        argv, cwd=venv, capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"}
    )


def test_the_sdk_imports_without_any_of_the_servers_packages(venv: Path) -> None:
    code = (
        "import sys, client.sdk, client.aio, client.cli, client.models; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({SERVER!r})))"
    )
    done = run(venv, str(venv / "bin" / "python"), "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    for name in SERVER:
        found = run(venv, str(venv / "bin" / "python"), "-c", f"import {name}")
        assert found.returncode != 0, f"{name} is installed beside the client"


def test_the_docq_command_has_the_users_commands(venv: Path) -> None:
    done = run(venv, str(venv / "bin" / "docq"), "--help")
    assert done.returncode == 0, done.stderr
    for command in ("submit", "status", "results", "cancel", "models"):
        assert command in done.stdout
    # The operator's commands need the server's packages: not offered here.
    assert "convert" not in done.stdout and "keys" not in done.stdout
    unreachable = run(
        venv, str(venv / "bin" / "docq"), "status", "x", "--url", "http://127.0.0.1:9"
    )
    assert unreachable.returncode == 3, unreachable.stderr
