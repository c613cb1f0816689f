"""conversion/package.py: model folders are published whole, never half-written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conversion.package import publish_version

pytestmark = pytest.mark.build  # every test here exports or converts a model (tests/tiers.py)


def _writer(content: str) -> Callable[[Path], None]:
    def fill(folder: Path) -> None:
        (folder / "model.onnx").write_text(content)
        (folder / "model.py").write_text("# runtime\n")

    return fill


def test_publish_creates_the_version(tmp_path: Path) -> None:
    target = publish_version(tmp_path, 1, _writer("v1"))
    assert target == tmp_path / "1"
    assert (target / "model.onnx").read_text() == "v1"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1"]


def test_publish_replaces_an_existing_version(tmp_path: Path) -> None:
    publish_version(tmp_path, 1, _writer("old"))
    publish_version(tmp_path, 1, _writer("new"))
    assert (tmp_path / "1" / "model.onnx").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1"]  # no temp or old folder left


def test_building_folder_is_invisible_to_triton(tmp_path: Path) -> None:
    seen: list[str] = []

    def fill(folder: Path) -> None:
        seen.append(folder.name)
        (folder / "model.onnx").write_text("x")

    publish_version(tmp_path, 1, fill)
    # Triton loads only folders whose names are integers.
    assert not seen[0].isdigit() and seen[0].startswith(".")


def test_failed_build_keeps_the_served_version(tmp_path: Path) -> None:
    publish_version(tmp_path, 1, _writer("good"))

    def broken(folder: Path) -> None:
        (folder / "model.onnx").write_text("half")
        raise RuntimeError("export failed")

    with pytest.raises(RuntimeError, match="export failed"):
        publish_version(tmp_path, 1, broken)
    assert (tmp_path / "1" / "model.onnx").read_text() == "good"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1"]


def test_published_files_are_readable_and_folders_traversable(tmp_path: Path) -> None:
    """The runtime's package (docq_runtime/) is a folder beside model.py: a Triton running
    as another user must be able to enter it, as it reads the files."""

    def fill(folder: Path) -> None:
        _writer("v1")(folder)
        (folder / "docq_runtime").mkdir(mode=0o700)
        (folder / "docq_runtime" / "__init__.py").write_text("")

    target = publish_version(tmp_path, 1, fill)
    assert (target / "model.py").stat().st_mode & 0o777 == 0o644
    assert (target / "docq_runtime").stat().st_mode & 0o777 == 0o755
