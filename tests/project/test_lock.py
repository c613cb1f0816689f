"""uv.lock, the project's one lock: it agrees with pyproject.toml and client/pyproject.toml
(`uv lock --locked`), pins torch's CPU build, and is what devstack/carry/pack.py carries."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from devstack.carry import pack
from devstack.lock import LOCK, locked, normalized

REPO = LOCK.parent
UV = Path(sys.executable).with_name("uv")


def check(root: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [UV, "lock", "--locked", *flags],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_lock_agrees_with_the_projects_dependencies() -> None:
    # --offline: an unchanged project is checked against the lock alone, no index asked
    done = check(REPO, "--offline")
    assert done.returncode == 0, f"run `.venv/bin/uv lock` and commit uv.lock:\n{done.stderr}"


def test_a_dependency_changed_without_the_lock_is_caught(tmp_path: Path) -> None:
    """The check above can fail: the same project with one requirement raised (the index
    is asked for the new bound unless uv's cache has it)."""
    for name in ("pyproject.toml", "uv.lock", "client/pyproject.toml"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    project = tmp_path / "client" / "pyproject.toml"
    project.write_text(project.read_text().replace('"rich>=13"', '"rich>=14"'))
    done = check(tmp_path)
    assert done.returncode != 0 and "needs to be updated" in done.stderr, done.stderr


def test_torch_is_the_cpu_build_and_no_cuda_library_is_locked() -> None:
    versions = locked()
    assert versions["torch"] == "2.13.0+cpu"
    cuda = [n for n in versions if n.startswith("nvidia-") and n != "nvidia-pytriton"]
    assert cuda == []


def test_pack_carries_the_locked_versions() -> None:
    versions = locked()
    for pin in pack.WHEELS:
        name, version = pin.split("==")
        assert versions[normalized(name)] == version
