"""devstack/carry/pack.py and remote.sh: the size budget of what a device call carries, and the
site archive's round trip through the lines remote.sh runs on the device."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from devstack.carry import pack

REMOTE = Path(pack.__file__).with_name("remote.sh")


def _tree(root: Path, mib: float) -> Path:
    """A checkout of one untracked file of `mib` MiB (git lists it: it travels)."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    with (root / "big.bin").open("wb") as f:
        f.truncate(int(mib * 2**20))
    return root


def _devpack(root: Path, mib: float) -> Path:
    root.mkdir()
    with (root / "site.tar.xz").open("wb") as f:
        f.truncate(int(mib * 2**20))  # sparse: its size is what counts, not the disk's
    return root


def test_the_budget_counts_the_tree_and_refuses_what_would_not_travel(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo", 2.0)
    fits, line = pack.budget(_devpack(tmp_path / "ok", 60.5), repo)  # 62.5 of 64, 1 kept free
    assert fits, line
    assert "60.5 MiB, the working tree 2.0 MiB: 62.5 MiB of the call's 64" in line
    fits, line = pack.budget(_devpack(tmp_path / "over", 61.5), repo)  # 63.5: inside the margin
    assert not fits, line
    # the tree alone may tip it: the same .devpack fits beside a smaller checkout
    assert pack.budget(tmp_path / "over", _tree(tmp_path / "small", 1.0))[0]


def _remote(devpack: Path, root: Path, probe: str) -> subprocess.CompletedProcess[str]:
    """`source remote.sh` as the device runs it (DEVPACK_DIR, DEVPACK_ROOT), then `probe`."""
    root.mkdir(exist_ok=True)
    script = f'source "{REMOTE}" || exit 9\n{probe}'
    env = {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "HOME": str(root)}
    env |= {"DEVPACK_DIR": str(devpack), "DEVPACK_ROOT": str(root)}
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, env=env, cwd=root, timeout=120
    )


PROBE = "python3 -c 'import docqprobe; print(docqprobe.WHERE)'\n"


def test_the_site_archive_extracts_to_an_importable_layout(tmp_path: Path) -> None:
    folder = tmp_path / "built"
    (folder / "site" / "docqprobe").mkdir(parents=True)
    (folder / "site" / "docqprobe" / "__init__.py").write_text("WHERE = 'archive'\n")
    devpack = tmp_path / "devpack"
    devpack.mkdir()
    pack.site_archive(devpack / "site.tar.xz", folder)
    done = _remote(devpack, tmp_path / "root", PROBE)
    assert done.returncode == 0, done.stderr
    # the archive's packages import
    assert done.stdout.splitlines() == ["archive"]


@pytest.mark.parametrize("profile", ["text", "convert"])
def test_each_profile_names_its_packages_once(profile: str) -> None:
    names = [pin.split("==")[0].lower() for pin in pack.PROFILES[profile]]
    assert len(names) == len(set(names))
    assert "tesserocr" not in names  # OCR is measured on the CPU (bench.sizing scans)
